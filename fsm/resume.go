package fsm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Answer is a person's answer to an interrupt: a tool approval takes Confirmed (with
// a rejection message or edited arguments), a guardrail review takes Decision
// ("approve" or "reject") and optional ReviewerNotes.
type Answer struct {
	Confirmed        *bool           `json:"confirmed,omitempty"`
	RejectionMessage *string         `json:"rejection_message,omitempty"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	Decision         *string         `json:"decision,omitempty"`
	ReviewerNotes    *string         `json:"reviewer_notes,omitempty"`
	// Grant, with a yes to a question the tool policy asked, says yes for the rest of
	// the session to the commands its pattern names.
	Grant *GrantAnswer `json:"grant,omitempty"`
	// Extend answers a budget question: the amounts the budget grows by (decision
	// extend, which may be left out); decision stop ends the turn instead.
	Extend *events.BudgetAmounts `json:"extend,omitempty"`
}

// Resume answers a suspended turn's interrupts and drives it on in the background.
// Every pending interrupt must be answered. Answering an interrupt again with the same
// answer changes nothing (the turn's current outcome is returned, already finished);
// with a different answer it is a conflict. Errors: invalid (a missing, unknown or
// malformed answer, arguments that fail the tool's schema), not_found, conflict (no
// suspended turn, a different answer).
func (e *Engine) Resume(ctx context.Context, session, user string, answers map[string]Answer) (*StartedTurn, error) {
	if len(answers) == 0 {
		return nil, events.FieldError(events.CodeInvalid, "resume_map", "is empty")
	}
	for id, a := range answers {
		if err := storableAnswer(id, a); err != nil {
			return nil, err
		}
	}
	ctx = context.WithoutCancel(ctx)
	h, unlock, err := e.lockToAppend(session)
	if err != nil {
		return nil, err
	}
	ctx = h.bound(ctx)
	started, r, err := e.prepareResume(ctx, session, user, answers, h)
	if err != nil || r == nil {
		unlock()
		return started, err
	}
	go func() {
		defer close(started.done)
		defer unlock()
		started.res, started.err = r.drive()
		r.broke(started.err)
	}()
	return started, nil
}

// askedQuestion is an interrupt of the turn and, once given, its answer: a tool
// approval (approval, approved) or a guardrail review (review, reviewed).
type askedQuestion struct {
	id       string
	path     string
	approval *events.ApprovalRequested
	approved *events.ApprovalResolved
	review   *events.ReviewRequested
	reviewed *events.ReviewResolved
	granted  *events.GrantGiven
	budget   *events.BudgetReached
	budgeted *events.BudgetResolved
}

func (q *askedQuestion) answered() bool {
	return q.approved != nil || q.reviewed != nil || q.budgeted != nil
}

// askedIn collects a turn's questions and the answers already given.
func askedIn(evs []events.Event) (map[string]*askedQuestion, error) {
	asked := map[string]*askedQuestion{}
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeApprovalRequested, events.TypeReviewRequested, events.TypeApprovalResolved, events.TypeReviewResolved, events.TypeGrantGiven,
			events.TypeBudgetReached, events.TypeBudgetResolved:
		default:
			continue
		}
		p, err := events.Decode(ev)
		if err != nil {
			return nil, err
		}
		switch v := p.(type) {
		case *events.ApprovalRequested:
			asked[v.InterruptID] = &askedQuestion{id: v.InterruptID, path: ev.Path, approval: v}
		case *events.ReviewRequested:
			asked[v.InterruptID] = &askedQuestion{id: v.InterruptID, path: ev.Path, review: v}
		case *events.ApprovalResolved:
			if q := asked[v.InterruptID]; q != nil {
				q.approved = v
			}
		case *events.ReviewResolved:
			if q := asked[v.InterruptID]; q != nil {
				q.reviewed = v
			}
		case *events.GrantGiven:
			if q := asked[v.InterruptID]; q != nil {
				q.granted = v
			}
		case *events.BudgetReached:
			asked[v.InterruptID] = &askedQuestion{id: v.InterruptID, path: ev.Path, budget: v}
		case *events.BudgetResolved:
			if q := asked[v.InterruptID]; q != nil {
				q.budgeted = v
			}
		}
	}
	return asked, nil
}

func (e *Engine) prepareResume(ctx context.Context, session, user string, answers map[string]Answer, h *runHandle) (*StartedTurn, *run, error) {
	s, err := e.store.Session(ctx, session)
	if err != nil {
		return nil, nil, err
	}
	t, err := e.lastTurn(ctx, session)
	if err != nil {
		return nil, nil, err
	}
	evs, err := e.store.Events(ctx, session, t.StartSeq-1)
	if err != nil {
		return nil, nil, err
	}
	asked, err := askedIn(evs)
	if err != nil {
		return nil, nil, err
	}
	app, agent, err := e.appAgent(s, t.Agent)
	if err != nil {
		return nil, nil, err
	}
	suspended := t.Status == projection.TurnSuspended
	var fresh []events.Event
	for _, id := range sortedIDs(answers) {
		q := asked[id]
		switch {
		case q == nil && !suspended:
			return nil, nil, events.Errorf(events.CodeConflict, "turn %s is %s, not suspended: there is nothing to resume", t.ID, t.Status)
		case q == nil:
			return nil, nil, events.FieldError(events.CodeInvalid, "resume_map."+events.ShownName(id), "is not an interrupt of turn %s", t.ID)
		}
		resolved, err := e.resolve(ctx, app, q, answers[id], user, "resume_map."+id)
		if err != nil {
			return nil, nil, err
		}
		grant, err := e.grantOf(app, q, answers[id], user, "resume_map."+id)
		if err != nil {
			return nil, nil, err
		}
		if q.answered() {
			if !q.sameAnswer(resolved) || !q.sameGrant(grant) {
				return nil, nil, events.FieldError(events.CodeConflict, "resume_map."+id, "was already answered differently")
			}
			continue
		}
		if !suspended {
			return nil, nil, events.Errorf(events.CodeConflict, "turn %s is %s, not suspended: there is nothing to resume", t.ID, t.Status)
		}
		ev, err := events.New(t.ID, q.path, resolved)
		if err != nil {
			return nil, nil, events.FieldError(events.CodeInvalid, "resume_map."+id, "%v", err)
		}
		fresh = append(fresh, ev)
		if grant != nil {
			fresh = append(fresh, events.MustNew(t.ID, q.path+"/grant", grant))
		}
	}
	if len(fresh) == 0 { // every answer repeats one already given: nothing changes
		res, err := e.outcome(ctx, session, t, evs)
		if err != nil {
			return nil, nil, err
		}
		done := &StartedTurn{ID: t.ID, StartSeq: t.StartSeq, done: make(chan struct{}), res: res}
		close(done.done)
		return done, nil, nil
	}
	var missing []string
	for id, q := range asked {
		if _, ok := answers[id]; !ok && !q.answered() {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, nil, events.FieldError(events.CodeInvalid, "resume_map", "every pending interrupt must be answered; missing %s", strings.Join(missing, ", "))
	}
	fresh = append(fresh, events.MustNew(t.ID, "", &events.TurnResumed{By: user}))
	last := evs[len(evs)-1].Seq
	out, err := e.appendPastQueue(ctx, session, last, fresh, true)
	if err != nil {
		return nil, nil, fmt.Errorf("resume turn %s: %w", t.ID, err)
	}
	for _, ev := range fresh {
		if ev.Type == events.TypeBudgetResolved {
			e.extensions.Add(1) // a run's spend read before it lacks it
		}
	}
	e.setRunningTurn(h, t.ID, out[0].Seq)
	all := append(evs, out...)
	conv, err := e.conversation(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	rec := newRecording(all)
	r := e.newRun(ctx, app, agent, session, s.Owner, s.ParentID, t.ID, out[len(out)-1].Seq, conv, rec, rec)
	r.stopped = h.stopped
	r.traceRun(true)
	if err := r.openTurn(t.Input); err != nil {
		return nil, nil, err
	}
	return &StartedTurn{ID: t.ID, StartSeq: out[0].Seq, done: make(chan struct{})}, r, nil
}

// resolve checks one answer and turns it into the event that records it.
func (e *Engine) resolve(ctx context.Context, app *App, q *askedQuestion, a Answer, user, field string) (events.Payload, error) {
	if q.budget != nil {
		return resolveBudget(q, a, user, field, app.BudgetExtendBy, isOperator(ctx))
	}
	if a.Extend != nil {
		return nil, events.FieldError(events.CodeInvalid, field+".extend", "answers a budget question; this interrupt is a %s", q.kind())
	}
	if q.review != nil {
		return resolveReview(q, a, user, field)
	}
	if a.Decision != nil || a.ReviewerNotes != nil {
		return nil, events.FieldError(events.CodeInvalid, field+".decision", "answers a guardrail review; a tool approval takes confirmed")
	}
	if a.Confirmed == nil {
		return nil, events.FieldError(events.CodeInvalid, field+".confirmed", "is required (true or false)")
	}
	out := &events.ApprovalResolved{InterruptID: q.id, Confirmed: *a.Confirmed, By: user}
	if *a.Confirmed {
		if a.RejectionMessage != nil {
			return nil, events.FieldError(events.CodeInvalid, field+".rejection_message", "goes only with confirmed: false")
		}
		if len(a.Arguments) > 0 {
			canon, err := events.Canonicalize(a.Arguments)
			if err != nil {
				return nil, events.FieldError(events.CodeInvalid, field+".arguments", "%v", err)
			}
			if v, ok := askingAgent(app, q.path).tool(q.approval.Tool).(ArgumentsValidator); ok {
				if err := v.ValidateArguments(canon); err != nil {
					if ae, ok := err.(*ArgumentsError); ok {
						return nil, events.FieldError(events.CodeInvalid, field+".arguments."+ae.Field, "%s", ae.Message)
					}
					return nil, events.FieldError(events.CodeInvalid, field+".arguments", "%v", err)
				}
			}
			out.Arguments = canon
		}
		return out, nil
	}
	if len(a.Arguments) > 0 {
		return nil, events.FieldError(events.CodeInvalid, field+".arguments", "goes only with confirmed: true")
	}
	if a.RejectionMessage != nil {
		if strings.TrimSpace(*a.RejectionMessage) == "" {
			return nil, events.FieldError(events.CodeInvalid, field+".rejection_message", "is empty; leave it out for the default text")
		}
		out.RejectionMessage = *a.RejectionMessage
	}
	return out, nil
}

// resolveReview checks a guardrail review's answer.
func resolveReview(q *askedQuestion, a Answer, user, field string) (events.Payload, error) {
	switch {
	case a.Confirmed != nil || a.RejectionMessage != nil || len(a.Arguments) > 0:
		return nil, events.FieldError(events.CodeInvalid, field+".confirmed", "answers a tool approval; a guardrail review takes decision (approve or reject)")
	case a.Decision == nil:
		return nil, events.FieldError(events.CodeInvalid, field+".decision", "is required (approve or reject)")
	case *a.Decision != events.DecisionApprove && *a.Decision != events.DecisionReject:
		return nil, events.FieldError(events.CodeInvalid, field+".decision", "must be approve or reject, not %q", *a.Decision)
	case a.ReviewerNotes != nil && strings.TrimSpace(*a.ReviewerNotes) == "":
		return nil, events.FieldError(events.CodeInvalid, field+".reviewer_notes", "is empty; leave it out")
	}
	out := &events.ReviewResolved{InterruptID: q.id, Decision: *a.Decision, By: user}
	if a.ReviewerNotes != nil {
		out.ReviewerNotes = *a.ReviewerNotes
	}
	return out, nil
}

// sameAnswer says whether an answer repeats the one already given (who gave it aside).
func (q *askedQuestion) sameAnswer(p events.Payload) bool {
	switch b := p.(type) {
	case *events.ApprovalResolved:
		a := q.approved
		return a != nil && a.Confirmed == b.Confirmed && a.RejectionMessage == b.RejectionMessage && bytes.Equal(a.Arguments, b.Arguments)
	case *events.ReviewResolved:
		a := q.reviewed
		return a != nil && a.Decision == b.Decision && a.ReviewerNotes == b.ReviewerNotes
	case *events.BudgetResolved:
		a := q.budgeted
		return a != nil && a.Decision == b.Decision && (a.Extend == nil) == (b.Extend == nil) && (a.Extend == nil || *a.Extend == *b.Extend)
	}
	return false
}

// sameGrant says whether a grant repeats the one given with the answer (who gave it
// and its id aside): none again, or the same pattern.
func (q *askedQuestion) sameGrant(g *events.GrantGiven) bool {
	if g == nil || q.granted == nil {
		return g == nil && q.granted == nil
	}
	return g.Command == q.granted.Command && g.Prefix == q.granted.Prefix
}

func sortedIDs(m map[string]Answer) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (e *Engine) lastTurn(ctx context.Context, session string) (projection.Turn, error) {
	t, err := e.store.LastTurn(ctx, session)
	if events.IsCode(err, events.CodeNotFound) {
		return t, events.Errorf(events.CodeConflict, "session %s has no turn to resume", session)
	}
	return t, err
}

func (e *Engine) appAgent(s projection.Session, agentName string) (*App, *Agent, error) {
	app, ok := e.apps[s.App]
	if !ok {
		return nil, nil, events.Errorf(events.CodeInvalid, "session %s belongs to app %q, which is not configured", s.ID, s.App)
	}
	agent, ok := app.Agents[agentName]
	if !ok {
		return nil, nil, events.Errorf(events.CodeInvalid, "session %s is with agent %q, which app %s no longer has", s.ID, agentName, app.Name)
	}
	return app, agent, nil
}

// outcome rebuilds a turn's result from its events, for an answer that changes nothing.
func (e *Engine) outcome(ctx context.Context, session string, t projection.Turn, evs []events.Event) (*Result, error) {
	res := &Result{Session: session, TurnID: t.ID, Agent: t.Agent, Usage: t.Usage}
	last := evs[len(evs)-1]
	switch p, err := events.Decode(last); {
	case err != nil:
		return nil, err
	default:
		switch v := p.(type) {
		case *events.TurnCommitted:
			res.Status, res.Output, res.Items, res.Agent, res.Usage = StatusCompleted, v.Output, v.Items, v.Agent, v.Usage
		case *events.TurnFailed:
			res.Status, res.Error = StatusFailed, &ResultError{Code: v.ErrorCode, Message: v.Message, Path: v.Path}
		case *events.TurnCanceled:
			res.Status, res.Error = StatusCanceled, &ResultError{Code: events.CodeCanceled, Message: v.Reason}
		default:
			return nil, events.Errorf(events.CodeConflict, "turn %s is %s: its outcome is not known yet", t.ID, t.Status)
		}
	}
	return res, nil
}

// askingAgent is the agent whose tool call an approval at path is about: the path is
// "…/<agent>/tool/<call id>/approval", nested agents included.
func askingAgent(app *App, path string) *Agent {
	segs := strings.Split(path, "/")
	if len(segs) >= 4 {
		if ag, ok := app.Agents[segs[len(segs)-4]]; ok {
			return ag
		}
	}
	return &Agent{}
}

// ToolParameters is the JSON schema of the arguments of the tool an approval at path
// in app asks about: what an edit of its arguments must fit (a reviewer's page checks
// an edit with it before sending; resume checks it again). ok is false when the app
// has no such tool there, or the tool declares no schema.
func (e *Engine) ToolParameters(app, path, tool string) (json.RawMessage, bool) {
	a, ok := e.apps[app]
	if !ok {
		return nil, false
	}
	t := askingAgent(a, path).tool(tool)
	if t == nil {
		return nil, false
	}
	p := t.Spec().Parameters
	return p, len(p) > 0
}
