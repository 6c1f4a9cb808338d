package fsm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// ExpiredBy names the answerer of an approval that expired.
const ExpiredBy = "turnlog"

// ExpireDue rejects every approval whose expires_in has passed without an answer, with
// the reason recorded, and resumes each turn whose last pending question that was. It
// reads the engine's clock once; serve calls it periodically. It returns the outcomes
// of the turns it resumed, and the errors of those it could not expire, joined (a
// turn that fails does not keep the others from expiring).
func (e *Engine) ExpireDue(ctx context.Context) ([]*Result, error) {
	turns, err := e.store.SuspendedTurns(ctx)
	if err != nil {
		return nil, err
	}
	now := e.opts.Clock()
	var results []*Result
	var errs []error // a turn that fails here does not keep the others from expiring
	for _, t := range turns {
		res, err := e.expireTurn(ctx, t, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("expire approvals of turn %s of %s: %w", t.ID, t.Session, err))
			continue
		}
		if res != nil {
			results = append(results, res)
		}
	}
	return results, errors.Join(errs...)
}

// expireTurn rejects the approvals of one suspended turn that are past due at now;
// when none is left unanswered the turn goes on, and its result is returned.
func (e *Engine) expireTurn(ctx context.Context, t projection.Turn, now time.Time) (*Result, error) {
	evs, err := e.store.Events(ctx, t.Session, t.StartSeq-1)
	if err != nil {
		return nil, err
	}
	due, pending := expired(evs, now)
	if len(due) == 0 {
		return nil, nil
	}
	if len(due) < pending {
		return nil, e.rejectOnly(ctx, t.Session, t.ID, evs, due)
	}
	st, err := e.Resume(ctx, t.Session, ExpiredBy, due)
	if err != nil {
		return nil, err
	}
	return st.Wait()
}

// expired finds the unanswered approvals of a turn that are past due at now, and
// counts the unanswered ones.
func expired(evs []events.Event, now time.Time) (map[string]Answer, int) {
	asked := map[string]events.Event{}
	answered := map[string]bool{}
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeApprovalRequested:
			if q, err := events.DecodeAs[*events.ApprovalRequested](ev); err == nil {
				asked[q.InterruptID] = ev
			}
		case events.TypeReviewRequested: // never expires, but is pending
			if q, err := events.DecodeAs[*events.ReviewRequested](ev); err == nil {
				asked[q.InterruptID] = ev
			}
		case events.TypeApprovalResolved:
			if a, err := events.DecodeAs[*events.ApprovalResolved](ev); err == nil {
				answered[a.InterruptID] = true
			}
		case events.TypeReviewResolved:
			if a, err := events.DecodeAs[*events.ReviewResolved](ev); err == nil {
				answered[a.InterruptID] = true
			}
		case events.TypeBudgetReached: // never expires, but is pending
			if q, err := events.DecodeAs[*events.BudgetReached](ev); err == nil {
				asked[q.InterruptID] = ev
			}
		case events.TypeBudgetResolved:
			if a, err := events.DecodeAs[*events.BudgetResolved](ev); err == nil {
				answered[a.InterruptID] = true
			}
		}
	}
	due := map[string]Answer{}
	pending := 0
	for id, ev := range asked {
		if answered[id] {
			continue
		}
		pending++
		if ev.Type != events.TypeApprovalRequested {
			continue
		}
		q, _ := events.DecodeAs[*events.ApprovalRequested](ev)
		if q.ExpiresInMS <= 0 {
			continue
		}
		limit := time.Duration(q.ExpiresInMS) * time.Millisecond
		if !now.Before(ev.At.Add(limit)) {
			msg := fmt.Sprintf("No one approved this call within %s; it expired and did not run.", limit)
			no := false
			due[id] = Answer{Confirmed: &no, RejectionMessage: &msg}
		}
	}
	return due, pending
}

// rejectOnly records expired rejections while other questions of the turn still wait.
func (e *Engine) rejectOnly(ctx context.Context, session, turn string, evs []events.Event, due map[string]Answer) error {
	h, unlock, err := e.lock(session)
	if err != nil {
		return err
	}
	ctx = h.bound(ctx)
	defer unlock()
	var out []events.Event
	for _, id := range sortedIDs(due) {
		path := ""
		for _, ev := range evs {
			if ev.Type == events.TypeApprovalRequested {
				if q, err := events.DecodeAs[*events.ApprovalRequested](ev); err == nil && q.InterruptID == id {
					path = ev.Path
				}
			}
		}
		out = append(out, events.MustNew(turn, path, &events.ApprovalResolved{InterruptID: id, Confirmed: false,
			RejectionMessage: *due[id].RejectionMessage, By: ExpiredBy}))
	}
	_, err = e.appendPastQueue(ctx, session, evs[len(evs)-1].Seq, out, false)
	return err
}
