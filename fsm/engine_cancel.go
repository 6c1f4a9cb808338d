package fsm

// Canceling a turn.

import (
	"context"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Cancel stops a running or suspended turn of session: the context of every tool
// running in it ends (bash and command tools lose their PID namespace, HTTP and MCP
// requests are cut, Go functions see ctx.Done()), each stopped call is recorded as
// canceled — or, for one that ignores its context past Options.CancelGrace, as
// abandoned —, then TurnCanceled with reason; Cancel returns once it is recorded. A suspended turn, or one a crash left running, is canceled
// directly. Errors: not_found,
// conflict (the turn has already ended).
func (e *Engine) Cancel(ctx context.Context, session, turn, reason string) (projection.Turn, error) {
	if reason == "" {
		reason = DefaultCancelReason
	}
	if err := storableText("reason", reason); err != nil {
		return projection.Turn{}, err
	}
	e.mu.Lock()
	h := e.running[session]
	running := h != nil && h.turn == turn // read under the lock setRunningTurn writes under
	e.mu.Unlock()
	if running {
		h.stop(reason)
		select {
		case <-h.finished:
		case <-ctx.Done():
			return projection.Turn{}, ctx.Err()
		}
		return e.store.Turn(ctx, session, turn)
	}
	t, err := e.store.Turn(ctx, session, turn)
	if events.IsCode(err, events.CodeNotFound) {
		if q, derr := e.dropQueued(ctx, session, turn, reason); q != nil || derr != nil {
			if derr != nil {
				return projection.Turn{}, derr
			}
			// It never started: the turn as it stood, queued, now canceled.
			now := e.opts.Clock().UTC()
			return projection.Turn{Session: session, ID: turn, Status: projection.TurnCanceled, Input: q.Input, Agents: []string{},
				StartedAt: q.QueuedAt, EndedAt: &now, ErrorCode: events.CodeCanceled, ErrorMessage: reason}, nil
		}
	}
	if err != nil {
		return t, err
	}
	if t.Status != projection.TurnRunning && t.Status != projection.TurnSuspended {
		return t, events.Errorf(events.CodeConflict, "turn %s is %s: there is nothing to cancel", turn, t.Status)
	}
	h, unlock, err := e.lock(session)
	if relay := e.opts.Cluster; relay != nil && events.IsCode(err, events.CodeConflict) && t.Status == projection.TurnRunning {
		return e.cancelElsewhere(ctx, relay, session, turn, reason)
	}
	if err != nil {
		return t, err
	}
	ctx = h.bound(ctx)
	defer unlock()
	if ph := e.store; t.Status == projection.TurnRunning { // counted again: the run that held them is gone
		// No process runs it: the one that did went away, with its counts in memory.
		if err := ph.HealTurnProgress(ctx, session, turn); err != nil {
			return t, err
		}
		if t, err = e.store.Turn(ctx, session, turn); err != nil {
			return t, err
		}
	}
	last, err := e.store.LastSeq(ctx, session)
	if err != nil {
		return t, err
	}
	ev, err := events.New(turn, "", &events.TurnCanceled{Reason: reason, Usage: t.Usage})
	if err != nil {
		return t, err
	}
	if _, err := e.appendPastQueue(ctx, session, last, []events.Event{ev}, false); err != nil {
		return t, err
	}
	ended, err := e.store.Turn(ctx, session, turn)
	if err == nil {
		app := ""
		if s, serr := e.store.Session(ctx, session); serr == nil {
			app = s.App
		}
		e.opts.Observer.TurnEnded(TurnEnd{App: app, Session: session, Turn: turn, Status: StatusCanceled, Code: events.CodeCanceled, RequestID: RequestIDOf(ctx),
			Message: reason, Took: e.opts.Clock().Sub(t.StartedAt)})
	}
	return ended, err
}
