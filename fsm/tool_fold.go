package fsm

import (
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// foldTools folds what a response's calls came to into the turn once they ran: a
// nested agent's failure (or the turn's cancel) ends the turn; questions suspend it;
// the output guardrails may hold it; else the response's text, each call and each
// output (in call order, whatever order they finished in) and the loop hint join the
// conversation, and a handoff's agent takes over. A non-nil result ends the turn.
func (r *run) foldTools(resp events.ModelResponse, p *toolPlan) (*Result, error) {
	ag, slots, hint, next := r.agent, p.slots, p.hint, p.next
	for _, s := range slots {
		if s.stop != nil && s.stop.failure != nil {
			if r.stopRequested() { // the nested agent stopped because the turn was canceled
				return r.cancelTurn()
			}
			f := s.stop.failure
			if s.stop.atBudget {
				if r.prefix != "" { // a nested caller: the turn's own run ends it
					return &Result{Session: r.session, TurnID: r.turn, Status: StatusCanceled, Agent: ag.Name, Error: f}, nil
				}
				return r.cancelBecause(f.Message)
			}
			return r.fail(f.Code, fmt.Sprintf("agent tool %s (call %s) failed: %s", s.call.Name, s.call.ID, f.Message), f.Path)
		}
	}
	waiting := waitingOf(slots) // with the questions nested runs wait for, in call order
	if res, err := r.outputGate(slots); res != nil || err != nil {
		return res, err
	}
	if len(waiting) > 0 {
		return r.suspend(waiting)
	}
	r.countEvidence(slots)
	if resp.Text != "" {
		r.conv.append(events.AssistantMessage(ag.Name, resp.Text))
	}
	for _, s := range slots {
		r.conv.append(events.Item{Type: events.ItemFunctionCall, CallID: s.call.ID, Name: s.call.Name, Arguments: s.call.Arguments, Agent: ag.Name})
	}
	for _, s := range slots {
		r.conv.append(events.Item{Type: events.ItemFunctionCallOutput, CallID: s.call.ID, Output: s.result.ModelText()})
	}
	if hint != "" {
		r.conv.append(events.Item{Type: events.ItemMessage, Role: "system", Content: hint})
	}
	if next != nil {
		r.agent = next
	}
	return nil, nil
}
