package fsm

import (
	"context"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
)

// ExpiredBy names the answerer of an approval that expired.
const ExpiredBy = "turnlog"

// ExpireDue rejects every approval whose expires_in has passed without an answer, with
// the reason recorded, and resumes each turn whose last pending question that was. It
// reads the engine's clock once; serve calls it periodically. It returns the outcomes
// of the turns it resumed.
func (e *Engine) ExpireDue(ctx context.Context) ([]*Result, error) {
	turns, err := e.store.SuspendedTurns(ctx)
	if err != nil {
		return nil, err
	}
	now := e.opts.Clock()
	var results []*Result
	for _, t := range turns {
		evs, err := e.store.Events(ctx, t.Session, t.StartSeq-1)
		if err != nil {
			return results, err
		}
		due, pending := expired(evs, now)
		if len(due) == 0 {
			continue
		}
		if len(due) < pending {
			if err := e.rejectOnly(ctx, t.Session, t.ID, evs, due); err != nil {
				return results, err
			}
			continue
		}
		st, err := e.Resume(ctx, t.Session, ExpiredBy, due)
		if err != nil {
			return results, fmt.Errorf("expire approvals of turn %s: %w", t.ID, err)
		}
		res, err := st.Wait()
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	return results, nil
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
	_, unlock, err := e.lock(session)
	if err != nil {
		return err
	}
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
