package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// DefaultIdempotencyTTL is how long an Idempotency-Key is remembered.
const DefaultIdempotencyTTL = 24 * time.Hour

// HeaderIdempotencyKey makes a write request safe to repeat.
const HeaderIdempotencyKey = "Idempotency-Key"

// CodeIdempotencyMismatch: an Idempotency-Key used again with another body or route.
const CodeIdempotencyMismatch = events.CodeIdempotencyMismatch

// IdempotencyKeys is where write requests' Idempotency-Keys are kept (the store), per
// user, across restarts.
type IdempotencyKeys interface {
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

// keyed is a write request with an Idempotency-Key: claimed (this request acts) or
// not (an earlier one did, or is doing it: rec says what it made).
type keyed struct {
	s       *Server
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

// idempotency reads a write request's Idempotency-Key (nil without one) and claims it
// for this route and body — compared as a hash of the canonical JSON —, or returns
// what the earlier request with the key made. The same key on another route or with
// another body is a 422.
//
// adopt, when given, finds what an abandoned claim's request made before its process
// ended (a turn it started, named in the log): the key is given that target, and
// the request is answered from it instead of acting again.
func (s *Server) idempotency(c echo.Context, body []byte, adopt ...func(ctx context.Context, rec projection.IdempotencyRecord) (session, turn string, startSeq int64, ok bool, err error)) (*keyed, error) {
	key := c.Request().Header.Get(HeaderIdempotencyKey)
	if key == "" || s.cfg.Idempotency == nil {
		return nil, nil
	}
	if len(key) > 255 {
		return nil, events.FieldError(events.CodeInvalid, HeaderIdempotencyKey, "is longer than 255 characters")
	}
	canon := []byte{}
	if len(body) > 0 {
		var err error
		if canon, err = events.Canonicalize(body); err != nil {
			return nil, events.FieldError(events.CodeInvalid, "body", "%v", err)
		}
	}
	// How a request asks for its answer is not part of what it asks: "stream" (like
	// Accept) is left out of the hash. A key kept before that was hashed over the
	// whole body, which still matches.
	wholeSum := sha256.Sum256(canon)
	whole := hex.EncodeToString(wholeSum[:])
	sum := sha256.Sum256(withoutMember(canon, "stream"))
	route := c.Request().Method + " " + c.Request().URL.Path
	rec := projection.IdempotencyRecord{Owner: userOf(c), Key: key, Route: route, BodyHash: hex.EncodeToString(sum[:])}
	ctx := c.Request().Context()
	id := rec.Owner + "\x00" + key
	for pass := 0; ; pass++ {
		if pass == maxClaimPasses {
			return nil, &events.Error{Code: events.CodeConflict, Field: HeaderIdempotencyKey,
				Message: "a request with Idempotency-Key " + strconv.Quote(key) + " is in progress; send it again shortly"}
		}
		// A claim is dated when it is made: a request that waited here does not make
		// one that looks old to the other nodes.
		now := s.now()
		rec.CreatedAt, rec.ExpiresAt = now, now.Add(s.idempotencyTTL())
		ch, mine := s.inflight.reserve(id)
		if !mine { // a request of this process holds the key: wait until it has made something
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		got, claimed, err := s.cfg.Idempotency.ClaimKey(ctx, rec, now)
		if err != nil {
			s.inflight.end(id, ch)
			return nil, err
		}
		k := &keyed{s: s, owner: rec.Owner, key: key, claimed: claimed, rec: got, done: ch}
		if claimed {
			return k, nil
		}
		s.inflight.end(id, ch)
		switch {
		case got.Route != route:
			return nil, &events.Error{Code: CodeIdempotencyMismatch, Field: HeaderIdempotencyKey,
				Message: "Idempotency-Key " + strconv.Quote(key) + " was used for " + got.Route + "; a key stands for one request"}
		case got.BodyHash != rec.BodyHash && got.BodyHash != whole:
			return nil, &events.Error{Code: CodeIdempotencyMismatch, Field: HeaderIdempotencyKey,
				Message: "Idempotency-Key " + strconv.Quote(key) + " was used with another body; a key stands for one request"}
		case got.Session != "":
			return k, nil // it made something: answer from that
		case s.cfg.ClaimHold > 0 && now.Sub(got.CreatedAt) < s.cfg.ClaimHold:
			return nil, &events.Error{Code: events.CodeConflict, Field: HeaderIdempotencyKey,
				Message: "a request with Idempotency-Key " + strconv.Quote(key) + " is in progress on another node; send it again shortly"}
		}
		// Claimed, and nothing recorded as made, with no request of this process
		// holding it (or, on a shared store, for longer than ClaimHold): the request
		// that claimed it ended with its process — before it acted, or after it acted
		// but before it recorded what it made. What the log says it made answers;
		// else act now.
		if len(adopt) > 0 {
			session, turn, startSeq, ok, err := adopt[0](ctx, got)
			if err != nil {
				return nil, err
			}
			if ok {
				if err := s.cfg.Idempotency.SetKeyTarget(ctx, rec.Owner, key, got.CreatedAt, session, turn, startSeq); err != nil && !events.IsCode(err, events.CodeConflict) {
					return nil, err
				}
				continue // answered from what it made (or from what another repeat found)
			}
		}
		if err := s.cfg.Idempotency.ReleaseKey(ctx, rec.Owner, key, got.CreatedAt); err != nil {
			return nil, err
		} // a repeat elsewhere that released it first has claimed it anew: the next claim sees that

	}
}

// maxClaimPasses bounds the claim loop: a key that neither can be claimed nor
// answers (its claim taken over again and again) is a 409 to send again.
const maxClaimPasses = 20

func (k *keyed) id() string { return k.owner + "\x00" + k.key }

// digest is what the log records of the key's claim (events.TurnStarted.RequestKey):
// no one learns the key from it, and another claim of the key (after it expired) has
// another.
func (k *keyed) digest() string { return requestKeyDigest(k.owner, k.key, k.rec.CreatedAt) }

func requestKeyDigest(owner, key string, claimedAt time.Time) string {
	sum := sha256.Sum256([]byte(owner + "\x00" + key + "\x00" + strconv.FormatInt(claimedAt.UnixNano(), 10)))
	return hex.EncodeToString(sum[:16])
}

// adoptWindow is how many of a session's newest turns a repeat looks through for the
// one its first request started: that request claimed the key moments before.
const adoptWindow = 20

// startedFor finds, among the newest turns of session, the one a request with the
// key started (its TurnStarted carries the key's digest), reading the log once.
func (s *Server) startedFor(session string) func(ctx context.Context, rec projection.IdempotencyRecord) (string, string, int64, bool, error) {
	return func(ctx context.Context, rec projection.IdempotencyRecord) (string, string, int64, bool, error) {
		turns, err := s.cfg.Reader.Turns(ctx, session)
		if err != nil || len(turns) == 0 {
			if err == nil || events.IsCode(err, events.CodeNotFound) {
				return "", "", 0, false, nil
			}
			return "", "", 0, false, err
		}
		from := turns[max(len(turns)-adoptWindow, 0)].StartSeq - 1
		evs, err := s.cfg.Reader.Events(ctx, session, from)
		if err != nil {
			return "", "", 0, false, err
		}
		digest := requestKeyDigest(rec.Owner, rec.Key, rec.CreatedAt)
		for _, ev := range evs {
			if ev.Type != events.TypeTurnStarted {
				continue
			}
			if st, err := events.DecodeAs[*events.TurnStarted](ev); err == nil && st.RequestKey == digest {
				return session, ev.Turn, ev.Seq, true, nil
			}
		}
		return "", "", 0, false, nil
	}
}

// made records what a claimed request made, so a repeat answers from it, and lets
// the repeats waiting in this process go on.
func (k *keyed) made(ctx context.Context, session, turn string, startSeq int64) error {
	if k == nil || !k.claimed {
		return nil
	}
	k.acted = true // whatever happens to the record now, the request acted: its claim is never given up
	if err := k.s.cfg.Idempotency.SetKeyTarget(context.WithoutCancel(ctx), k.owner, k.key, k.rec.CreatedAt, session, turn, startSeq); err != nil {
		// A repeat elsewhere took the claim over: when it found what this request
		// made (adopt), the key names it, and this request is answered all the same.
		rec, kerr := k.s.cfg.Idempotency.Key(context.WithoutCancel(ctx), k.owner, k.key)
		if !events.IsCode(err, events.CodeConflict) || kerr != nil || rec.Session != session || rec.Turn != turn {
			return err
		}
	}
	k.rec.Session, k.rec.Turn, k.rec.StartSeq = session, turn, startSeq
	k.s.inflight.end(k.id(), k.done)
	return nil
}

// finish ends a claimed request: one that made nothing (it was refused) gives its key
// up, so it may be sent again.
func (k *keyed) finish(ctx context.Context) {
	if k == nil || !k.claimed {
		return
	}
	if !k.acted {
		k.s.cfg.Idempotency.ReleaseKey(context.WithoutCancel(ctx), k.owner, k.key, k.rec.CreatedAt)
	}
	k.s.inflight.end(k.id(), k.done)
}

// replayed says whether an earlier request with this key answers this one.
func (k *keyed) replayed() bool { return k != nil && !k.claimed }

func (s *Server) idempotencyTTL() time.Duration {
	if s.cfg.IdempotencyTTL > 0 {
		return s.cfg.IdempotencyTTL
	}
	return DefaultIdempotencyTTL
}

func (s *Server) now() time.Time {
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
