package fsm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/policy"
)

// HeldGrant is a grant a session holds: a person's yes, for the rest of the session,
// to the commands a pattern names (see policy.Grant), and the tool policy it was
// given under.
type HeldGrant struct {
	policy.Grant
	Policy string // the fingerprint of the tool policy it was given under
}

// turnGrants are the grants a turn's runs (its own and the nested ones) decide
// under: read from the log once, when a call first asks, and less each grant the turn
// finds given under another policy.
type turnGrants struct {
	mu     sync.Mutex
	loaded bool
	held   []HeldGrant
}

// SessionGrants folds a session's grants from its log: those given in it and, for a
// branch, those its sources held at the branch point, less those revoked since.
func (e *Engine) SessionGrants(ctx context.Context, session string) ([]HeldGrant, error) {
	evs, err := e.grantLog(ctx, session)
	if err != nil {
		return nil, err
	}
	views, err := foldGrants(evs, "")
	if err != nil {
		return nil, err
	}
	var held []HeldGrant
	for _, v := range views {
		if v.Revoked == nil {
			held = append(held, HeldGrant{Grant: policy.Grant{ID: v.ID, Agent: v.Agent, Tool: v.Tool, Command: strings.Fields(v.Command),
				Prefix: v.Prefix, By: v.By}, Policy: v.policy})
		}
	}
	return held, nil
}

// grantLog is the grant events a session decides under, oldest first: those of the
// sessions it was branched from, each up to where the next was branched from it, then
// its own.
func (e *Engine) grantLog(ctx context.Context, session string) ([]events.Event, error) {
	var parts [][]events.Event
	for id, upto := session, int64(0); id != ""; {
		evs, err := e.store.GrantEvents(ctx, id, upto)
		if err != nil {
			return nil, err
		}
		parts = append(parts, evs)
		s, err := e.store.Session(ctx, id)
		if err != nil {
			return nil, err
		}
		id, upto = s.ParentID, s.ParentSeq
	}
	var out []events.Event
	for i := len(parts) - 1; i >= 0; i-- {
		out = append(out, parts[i]...)
	}
	return out, nil
}

// grants are the grants the run decides under, read once for the turn.
func (r *run) grants() ([]HeldGrant, error) {
	tg := &r.log.grants
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if !tg.loaded {
		held, err := r.e.SessionGrants(r.ctx, r.session)
		if err != nil {
			return nil, err
		}
		tg.held, tg.loaded = held, true
	}
	return slices.Clone(tg.held), nil
}

// drop forgets a grant for the rest of the turn (it was revoked).
func (tg *turnGrants) drop(id string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.held = slices.DeleteFunc(tg.held, func(h HeldGrant) bool { return h.ID == id })
}

// granted applies the session's grants to a call that asks or is denied: covered by
// grants given under the tool policy of now, a call that asks is allowed; a grant
// that names one of the call's commands but was given under another policy is revoked
// (recorded at the call's path plus "/grant/<id>", by turnlog), and a person is asked
// again. A grant that cannot be read leaves the call as decided.
func (r *run) granted(s *toolSlot, sub policy.Subject, v policy.Verdict, pending []events.Event) (policy.Verdict, []events.Event) {
	held, err := r.grants()
	if err != nil || len(held) == 0 {
		return v, pending
	}
	now := r.app.ToolPolicy.Fingerprint()
	named := policy.CommandsOf(v, sub.Tool)
	var fresh []policy.Grant
	for _, h := range held {
		switch {
		case h.Policy == now:
			fresh = append(fresh, h.Grant)
		case h.Agent == sub.Agent && h.Tool == sub.Tool && slices.ContainsFunc(named, h.Covers):
			r.log.grants.drop(h.ID)
			pending = append(pending, events.MustNew(r.turn, s.path+"/grant/"+h.ID, &events.GrantRevoked{GrantID: h.ID, By: RevokedByTurnlog,
				Reason: fmt.Sprintf("the app's tool policy changed since it was given (policy %s, now %s): a person is asked again", h.Policy, now)}))
		}
	}
	out, _ := policy.Granted(v, sub, fresh)
	return out, pending
}

// RevokedByTurnlog is who revokes a grant a changed tool policy ended.
const RevokedByTurnlog = "turnlog"

// GrantView is a grant as people read it: the pattern, who gave it and when, in which
// session (a branch's may come from its source), and who revoked it, when and why.
type GrantView struct {
	ID      string    `json:"grant_id"`
	Agent   string    `json:"agent"`
	Tool    string    `json:"tool"`
	Command string    `json:"command,omitempty"`
	Prefix  string    `json:"prefix,omitempty"`
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Session string    `json:"session_id"`
	Turn    string    `json:"turn_id"`
	// Holds: it is not revoked and was given under the app's tool policy of now (one
	// given under another is revoked when a call next meets it).
	Holds   bool          `json:"holds"`
	Revoked *GrantRevoked `json:"revoked,omitempty"`
	policy  string        // the fingerprint of the policy it was given under
}

// GrantRevoked says who ended a grant, when and why.
type GrantRevoked struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// Grants lists every grant a session was given or holds from the sessions it was
// branched from, oldest first, with its revocation if any. Errors: not_found.
func (e *Engine) Grants(ctx context.Context, session string) ([]GrantView, error) {
	s, err := e.store.Session(ctx, session)
	if err != nil {
		return nil, err
	}
	evs, err := e.grantLog(ctx, session)
	if err != nil {
		return nil, err
	}
	now := ""
	if app := e.apps[s.App]; app != nil && app.ToolPolicy != nil {
		now = app.ToolPolicy.Fingerprint()
	}
	return foldGrants(evs, now)
}

// foldGrants reads grant events, oldest first, into the grants they give: each with
// its revocation, holding when not revoked and given under the policy now.
func foldGrants(evs []events.Event, now string) ([]GrantView, error) {
	out := []GrantView{}
	at := map[string]int{}
	for _, ev := range evs {
		p, err := events.Decode(ev)
		if err != nil {
			return nil, err
		}
		switch g := p.(type) {
		case *events.GrantGiven:
			at[g.GrantID] = len(out)
			out = append(out, GrantView{ID: g.GrantID, Agent: g.Agent, Tool: g.Tool, Command: g.Command, Prefix: g.Prefix,
				By: g.By, At: ev.At, Session: ev.Session, Turn: ev.Turn, Holds: g.Policy == now, policy: g.Policy})
		case *events.GrantRevoked:
			if k, ok := at[g.GrantID]; ok && out[k].Revoked == nil {
				out[k].Revoked = &GrantRevoked{By: g.By, At: ev.At, Reason: g.Reason}
				out[k].Holds = false
			}
		}
	}
	return out, nil
}

// RevokeGrant ends a grant of a session for the rest of it: the next call it would
// have covered asks a person again. It is recorded (a GrantRevoked between turns, at
// "grants/<id>") with who revoked it; a branch's revocation of a grant it holds from
// its source ends it in the branch only. Errors: not_found (the session, or no such
// grant), conflict (already revoked, or a turn is running: revoke it once the turn
// waits or ends).
func (e *Engine) RevokeGrant(ctx context.Context, session, grant, by string) (*GrantView, error) {
	h, unlock, err := e.lock(session)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ctx = h.bound(ctx)
	list, err := e.Grants(ctx, session)
	if err != nil {
		return nil, err
	}
	k := slices.IndexFunc(list, func(g GrantView) bool { return g.ID == grant })
	switch {
	case k < 0:
		return nil, events.FieldError(events.CodeNotFound, "grant_id", "session %s holds no grant %s", session, events.ShownName(grant))
	case list[k].Revoked != nil:
		return nil, events.FieldError(events.CodeConflict, "grant_id", "grant %s was revoked by %s at %s", grant, list[k].Revoked.By, list[k].Revoked.At.Format(time.RFC3339))
	}
	last, err := e.store.LastSeq(ctx, session)
	if err != nil {
		return nil, err
	}
	rv := &events.GrantRevoked{GrantID: grant, By: by, Reason: "revoked by " + by}
	out, err := e.appendEvents(ctx, session, last, []events.Event{events.MustNew("", "grants/"+grant, rv)}, false)
	if err != nil {
		return nil, err
	}
	g := list[k]
	g.Holds, g.Revoked = false, &GrantRevoked{By: by, At: out[0].At, Reason: rv.Reason}
	return &g, nil
}
