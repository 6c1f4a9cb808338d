package turns

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// DefaultKeyTTL is how long an Idempotency-Key is remembered.
const DefaultKeyTTL = 24 * time.Hour

// KeyField is the name errors about a request's key carry as their field.
const KeyField = "Idempotency-Key"

// MaxKeyLength bounds a key.
const MaxKeyLength = 255

// Keys is where write requests' Idempotency-Keys are kept (the store), per user,
// across restarts.
type Keys interface {
	// ClaimKey records r unless (owner, key) is recorded and not expired at now; then
	// it returns that record and false.
	ClaimKey(ctx context.Context, r projection.IdempotencyRecord, now time.Time) (projection.IdempotencyRecord, bool, error)
	// Key returns a record. Errors: sql.ErrNoRows.
	Key(ctx context.Context, owner, key string) (projection.IdempotencyRecord, error)
	// SetKeyTarget records what the request that claimed the key at claimedAt made:
	// the session, and the turn with the seq its part of the turn started after.
	// Errors: conflict (that claim is no longer the key's, or it made something).
	SetKeyTarget(ctx context.Context, owner, key string, claimedAt time.Time, session, turn string, startSeq int64) error
	// ReleaseKey forgets the claim made at claimedAt if it made nothing (its request
	// was refused, or ended with its process); another claim of the key stays.
	ReleaseKey(ctx context.Context, owner, key string, claimedAt time.Time) error
}

// Key makes a write safe to repeat: who sent it (Owner), the key they chose
// (Value; "" for a request without one), what it asks (Route: the operation and its
// target as the transport names them) and its body (JSON). A repeat must ask the
// same: the same route, and a body equal as canonical JSON (its top-level "stream",
// how the answer is carried, left out).
type Key struct {
	Owner, Value, Route string
	Body                []byte
}

// Made is what a keyed request made: a session, and a turn with the seq its part of
// the turn started at (0: the turn's start). Repeated says an earlier request with
// the key made it.
type Made struct {
	Session, Turn string
	StartSeq      int64
	Repeated      bool
}

// claim is a write request with a key: claimed (this request acts) or not (an
// earlier one did, or is doing it: rec says what it made). A nil claim is a request
// without a key; its methods do nothing.
type claim struct {
	s       *Service
	owner   string
	key     string
	claimed bool
	acted   bool // a claimed request made something (made was called)
	rec     projection.IdempotencyRecord
	done    chan struct{} // closed once a claimed request knows what it made
}

// inflight are the keys requests of this process hold, by owner and key: a request
// reserves its key here before it claims it in the store, so a repeat arriving in
// between waits instead of taking the claim for an abandoned one.
type inflight struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// reserve takes id for the caller (true), or returns the channel its holder closes.
func (f *inflight) reserve(id string) (chan struct{}, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, held := f.m[id]; held {
		return ch, false
	}
	if f.m == nil {
		f.m = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	f.m[id] = ch
	return ch, true
}

// end gives id up and wakes those waiting for it (once).
func (f *inflight) end(id string, ch chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m[id] != ch {
		return // already given up
	}
	delete(f.m, id)
	close(ch)
}

// adopter finds what an abandoned claim's request made before its process ended
// (a turn it started, named in the log).
type adopter func(ctx context.Context, rec projection.IdempotencyRecord) (Made, bool, error)

// claim claims k for its route and body, or returns what the earlier request with
// the key made (nil for a request without a key, or with no Keys). The same key on
// another route or with another body is idempotency_mismatch.
//
// adopt, when given, finds what an abandoned claim's request made before its process
// ended: the key is given that target, and the request is answered from it instead
// of acting again.
func (s *Service) claim(ctx context.Context, k Key, adopt adopter) (*claim, error) {
	if k.Value == "" || s.cfg.Keys == nil {
		return nil, nil
	}
	if len(k.Value) > MaxKeyLength {
		return nil, events.FieldError(events.CodeInvalid, KeyField, "is longer than %d characters", MaxKeyLength)
	}
	hash, whole, err := bodyHashes(k.Body)
	if err != nil {
		return nil, err
	}
	rec := projection.IdempotencyRecord{Owner: k.Owner, Key: k.Value, Route: k.Route, BodyHash: hash}
	id := rec.Owner + "\x00" + k.Value
	for pass := 0; ; pass++ {
		if pass == maxClaimPasses {
			return nil, &events.Error{Code: events.CodeConflict, Field: KeyField,
				Message: "a request with Idempotency-Key " + strconv.Quote(k.Value) + " is in progress; send it again shortly"}
		}
		// A claim is dated when it is made: a request that waited here does not make
		// one that looks old to the other nodes.
		now := s.now()
		rec.CreatedAt, rec.ExpiresAt = now, now.Add(s.keyTTL())
		ch, mine := s.inflight.reserve(id)
		if !mine { // a request of this process holds the key: wait until it has made something
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		got, claimed, err := s.cfg.Keys.ClaimKey(ctx, rec, now)
		if err != nil {
			s.inflight.end(id, ch)
			return nil, err
		}
		c := &claim{s: s, owner: rec.Owner, key: k.Value, claimed: claimed, rec: got, done: ch}
		if claimed {
			return c, nil
		}
		s.inflight.end(id, ch)
		switch {
		case got.Route != k.Route:
			return nil, &events.Error{Code: events.CodeIdempotencyMismatch, Field: KeyField,
				Message: "Idempotency-Key " + strconv.Quote(k.Value) + " was used for " + got.Route + "; a key stands for one request"}
		case got.BodyHash != rec.BodyHash && got.BodyHash != whole:
			return nil, &events.Error{Code: events.CodeIdempotencyMismatch, Field: KeyField,
				Message: "Idempotency-Key " + strconv.Quote(k.Value) + " was used with another body; a key stands for one request"}
		case got.Session != "":
			return c, nil // it made something: answer from that
		case s.cfg.ClaimHold > 0 && now.Sub(got.CreatedAt) < s.cfg.ClaimHold:
			return nil, &events.Error{Code: events.CodeConflict, Field: KeyField,
				Message: "a request with Idempotency-Key " + strconv.Quote(k.Value) + " is in progress on another node; send it again shortly"}
		}
		// Claimed, and nothing recorded as made, with no request of this process
		// holding it (or, on a shared store, for longer than ClaimHold): the request
		// that claimed it ended with its process — before it acted, or after it acted
		// but before it recorded what it made. What the log says it made answers;
		// else act now.
		if adopt != nil {
			m, ok, err := adopt(ctx, got)
			if err != nil {
				return nil, err
			}
			if ok {
				if err := s.cfg.Keys.SetKeyTarget(ctx, rec.Owner, k.Value, got.CreatedAt, m.Session, m.Turn, m.StartSeq); err != nil && !events.IsCode(err, events.CodeConflict) {
					return nil, err
				}
				continue // answered from what it made (or from what another repeat found)
			}
		}
		if err := s.cfg.Keys.ReleaseKey(ctx, rec.Owner, k.Value, got.CreatedAt); err != nil {
			return nil, err
		} // a repeat elsewhere that released it first has claimed it anew: the next claim sees that
	}
}

// bodyHashes are what a key's record holds of a body: the hash of its canonical
// JSON without "stream" — how a request asks for its answer is not part of what it
// asks (like Accept) — and, for a key kept before that, the hash of the whole.
func bodyHashes(body []byte) (hash, whole string, err error) {
	canon := []byte{}
	if len(body) > 0 {
		if canon, err = events.Canonicalize(body); err != nil {
			return "", "", events.FieldError(events.CodeInvalid, "body", "%v", err)
		}
	}
	wholeSum := sha256.Sum256(canon)
	sum := sha256.Sum256(withoutMember(canon, "stream"))
	return hex.EncodeToString(sum[:]), hex.EncodeToString(wholeSum[:]), nil
}

// Made says what the request with k's key made, when one with the same route and
// body did (ok false: none did, or the key stands for another request) — without
// claiming the key. A form sent again after its first sending was answered asks it.
func (s *Service) Made(ctx context.Context, k Key) (Made, bool, error) {
	if k.Value == "" || s.cfg.Keys == nil {
		return Made{}, false, nil
	}
	hash, whole, err := bodyHashes(k.Body)
	if err != nil {
		return Made{}, false, err
	}
	rec, err := s.cfg.Keys.Key(ctx, k.Owner, k.Value)
	if errors.Is(err, sql.ErrNoRows) || events.IsCode(err, events.CodeNotFound) {
		return Made{}, false, nil
	}
	if err != nil {
		return Made{}, false, err
	}
	if rec.Route != k.Route || (rec.BodyHash != hash && rec.BodyHash != whole) || rec.Session == "" || !rec.ExpiresAt.After(s.now()) {
		return Made{}, false, nil
	}
	return Made{Session: rec.Session, Turn: rec.Turn, StartSeq: rec.StartSeq, Repeated: true}, true, nil
}

// maxClaimPasses bounds the claim loop: a key that neither can be claimed nor
// answers (its claim taken over again and again) is a conflict to send again.
const maxClaimPasses = 20

func (c *claim) id() string { return c.owner + "\x00" + c.key }

// digest is what the log records of the key's claim (events.TurnStarted.RequestKey):
// no one learns the key from it, and another claim of the key (after it expired) has
// another. "" without a claim.
func (c *claim) digest() string {
	if c == nil {
		return ""
	}
	return requestKeyDigest(c.owner, c.key, c.rec.CreatedAt)
}

func requestKeyDigest(owner, key string, claimedAt time.Time) string {
	sum := sha256.Sum256([]byte(owner + "\x00" + key + "\x00" + strconv.FormatInt(claimedAt.UnixNano(), 10)))
	return hex.EncodeToString(sum[:16])
}

// made records what a claimed request made, so a repeat answers from it, and lets
// the repeats waiting in this process go on.
func (c *claim) made(ctx context.Context, m Made) error {
	if c == nil || !c.claimed {
		return nil
	}
	c.acted = true // whatever happens to the record now, the request acted: its claim is never given up
	keys := c.s.cfg.Keys
	if err := keys.SetKeyTarget(context.WithoutCancel(ctx), c.owner, c.key, c.rec.CreatedAt, m.Session, m.Turn, m.StartSeq); err != nil {
		// A repeat elsewhere took the claim over: when it found what this request
		// made (adopt), the key names it, and this request is answered all the same.
		rec, kerr := keys.Key(context.WithoutCancel(ctx), c.owner, c.key)
		if !events.IsCode(err, events.CodeConflict) || kerr != nil || rec.Session != m.Session || rec.Turn != m.Turn {
			return err
		}
	}
	c.rec.Session, c.rec.Turn, c.rec.StartSeq = m.Session, m.Turn, m.StartSeq
	c.s.inflight.end(c.id(), c.done)
	return nil
}

// finish ends a claimed request: one that made nothing (it was refused) gives its key
// up, so it may be sent again.
func (c *claim) finish(ctx context.Context) {
	if c == nil || !c.claimed {
		return
	}
	if !c.acted {
		c.s.cfg.Keys.ReleaseKey(context.WithoutCancel(ctx), c.owner, c.key, c.rec.CreatedAt)
	}
	c.s.inflight.end(c.id(), c.done)
}

// repeated says whether an earlier request with this key answers this one.
func (c *claim) repeated() bool { return c != nil && !c.claimed }

// madeBefore is what the earlier request with the key made.
func (c *claim) madeBefore() Made {
	return Made{Session: c.rec.Session, Turn: c.rec.Turn, StartSeq: c.rec.StartSeq, Repeated: true}
}

func (s *Service) keyTTL() time.Duration {
	if s.cfg.KeyTTL > 0 {
		return s.cfg.KeyTTL
	}
	return DefaultKeyTTL
}

func (s *Service) now() time.Time {
	if s.cfg.Clock != nil {
		return s.cfg.Clock()
	}
	return time.Now()
}

// withoutMember is canonical JSON canon without its top-level member name (canon
// itself when it is not an object or has no such member), canonical still.
func withoutMember(canon []byte, name string) []byte {
	if !gjson.GetBytes(canon, name).Exists() || len(canon) == 0 || canon[0] != '{' {
		return canon
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(canon, &m) != nil {
		return canon
	}
	delete(m, name)
	out, err := events.Marshal(m)
	if err != nil {
		return canon
	}
	return out
}
