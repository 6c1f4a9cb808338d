package fsm

// Recovering the turns a crash left running.

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Recover re-drives every turn that started and did not end (after a crash): recorded
// activities are reused, only what is missing runs. It returns one result per turn it
// recovered, and the errors of those it could not, joined: one turn that fails does
// not keep the others from being recovered. On a store several nodes share, it takes
// only the turns whose lease expired (their node is gone): a live node's are left.
func (e *Engine) Recover(ctx context.Context) ([]*Result, error) {
	ctx = context.WithoutCancel(ctx)
	running, err := e.store.RunningTurns(ctx)
	if err != nil {
		return nil, err
	}
	var results []*Result
	var errs []error
	shared := e.opts.Cluster != nil
	for _, t := range running {
		res, err := e.recoverTurn(ctx, t)
		if errors.Is(err, errTurnEnded) || (shared && events.IsCode(err, events.CodeConflict)) {
			continue // a live node runs it (this one, or another whose lease holds), or it ended meanwhile
		}
		if err != nil { // the others are recovered all the same
			errs = append(errs, fmt.Errorf("recover turn %s of %s: %w", t.ID, t.Session, err))
			continue
		}
		results = append(results, res)
	}
	errs = append(errs, e.kickAll(ctx)) // queued inputs of sessions now free start
	return results, errors.Join(errs...)
}

// progressHealer is a store that keeps a running turn's counters (model and tool
// calls, tokens) in memory between writes: before a turn whose process went away is
// recovered, the store counts them again from the log.

// turnRecovered is the TurnRecovered a recovery of the turn whose events (from its
// start) are evs appends first.
func turnRecovered(evs []events.Event) events.Event {
	p := &events.TurnRecovered{Attempt: 2}
	scheduled := map[string]bool{} // path → idempotent, for calls with no result yet
	var order []string
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeTurnRecovered:
			p.Attempt++
		case events.TypeToolScheduled:
			if ts, err := events.DecodeAs[*events.ToolScheduled](ev); err == nil {
				if _, seen := scheduled[ev.Path]; !seen {
					order = append(order, ev.Path)
				}
				scheduled[ev.Path] = ts.Idempotent
			}
		case events.TypeToolResulted:
			delete(scheduled, ev.Path)
			p.Replayed++
		case events.TypeModelCalled, events.TypeGuardrailChecked, events.TypeContextCompacted, events.TypeSkillLoaded:
			p.Replayed++
		}
	}
	for _, path := range order {
		idempotent, open := scheduled[path]
		switch {
		case !open:
		case idempotent:
			p.Resent = append(p.Resent, path)
		default:
			p.OutcomeUnknown = append(p.OutcomeUnknown, path)
		}
	}
	return events.MustNew(evs[0].Turn, fmt.Sprintf("recovered/%d", p.Attempt), p)
}

// earlierRuns counts the runs of a turn that sent the call at path and went away
// before its result was recorded: the recoveries recorded after it was scheduled.
func earlierRuns(rec *recording, path string) int {
	if rec == nil {
		return 0
	}
	sched, ok := rec.get(events.TypeToolScheduled, path)
	if !ok {
		return 0
	}
	n := 0
	for _, ev := range rec.events {
		if ev.Type == events.TypeTurnRecovered && ev.Seq > sched.Seq {
			n++
		}
	}
	return n
}

// errTurnEnded is a turn to recover that ended before its recovery could begin.
var errTurnEnded = errors.New("the turn ended before its recovery began")

func (e *Engine) recoverTurn(ctx context.Context, t projection.Turn) (*Result, error) {
	h, unlock, err := e.lock(t.Session)
	if err != nil {
		return nil, err
	}
	ctx = h.bound(ctx)
	defer unlock()
	// The list of running turns was read before the lock: the node that ran this one
	// may have ended it and given its lease up since.
	if now, err := e.store.Turn(ctx, t.Session, t.ID); err != nil {
		return nil, err
	} else if now.Status != projection.TurnRunning {
		return nil, errTurnEnded
	}
	e.setRunningTurn(h, t.ID, 0)
	e.forget(t.Session)
	if err := e.store.HealTurnProgress(ctx, t.Session, t.ID); err != nil {
		return nil, err
	}
	s, err := e.store.Session(ctx, t.Session)
	if err != nil {
		return nil, err
	}
	evs, err := e.store.Events(ctx, t.Session, t.StartSeq-1)
	if err != nil {
		return nil, err
	}
	conv, err := e.conversation(ctx, s)
	if err != nil {
		return nil, err
	}
	// The crash is a fact of the log: which run this is, and what becomes of the
	// calls that were in flight. Recorded once the run can begin, past any input
	// queued meanwhile.
	recovered, err := e.appendPastQueue(ctx, t.Session, evs[len(evs)-1].Seq, []events.Event{turnRecovered(evs)}, false)
	if err != nil {
		return nil, fmt.Errorf("record the recovery of turn %s: %w", t.ID, err)
	}
	evs = append(evs, recovered...)
	seq := recovered[len(recovered)-1].Seq
	app, ok := e.apps[s.App]
	var agent *Agent
	if ok {
		agent = app.Agents[t.Agent]
	}
	rec := newRecording(evs)
	r := e.newRun(ctx, app, agent, t.Session, s.Owner, s.ParentID, t.ID, seq, conv, rec, rec)
	r.stopped, r.stopper = h.stopped, h
	if agent == nil {
		r.conv.append(events.UserMessage(t.Input))
		return r.fail(events.CodeInvalid, fmt.Sprintf("app %q or agent %q is no longer configured", s.App, t.Agent), "")
	}
	r.traceRun(true)
	return r.begin(t.Input)
}
