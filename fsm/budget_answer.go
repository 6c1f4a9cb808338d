package fsm

import (
	"math"

	"github.com/turnlog/turnlog/events"
)

// kind names what an interrupt asks, for an answer's error.
func (q *askedQuestion) kind() string {
	switch {
	case q.budget != nil:
		return events.InterruptBudget
	case q.review != nil:
		return events.InterruptGuardrailReview
	}
	return events.InterruptToolApproval
}

// resolveBudget checks the answer to a budget question: decision extend with the
// amounts the budget grows by (decision may be left out when extend is given), or
// decision stop.
func resolveBudget(q *askedQuestion, a Answer, user, field string) (events.Payload, error) {
	switch {
	case a.Confirmed != nil || a.RejectionMessage != nil || len(a.Arguments) > 0 || a.Grant != nil:
		return nil, events.FieldError(events.CodeInvalid, field+".confirmed", "answers a tool approval; a budget question takes extend (the amounts) or decision: stop")
	case a.ReviewerNotes != nil:
		return nil, events.FieldError(events.CodeInvalid, field+".reviewer_notes", "answers a guardrail review; a budget question takes extend or decision: stop")
	}
	decision := events.BudgetExtend
	if a.Decision != nil {
		decision = *a.Decision
	}
	br := q.budget
	out := &events.BudgetResolved{InterruptID: q.id, Decision: decision, Scope: br.Scope, Level: br.Level, Agent: br.Agent, Day: br.Day, By: user}
	switch decision {
	case events.BudgetStop:
		if a.Extend != nil {
			return nil, events.FieldError(events.CodeInvalid, field+".extend", "goes only with decision extend")
		}
		return out, nil
	case events.BudgetExtend:
	default:
		return nil, events.FieldError(events.CodeInvalid, field+".decision", "must be extend or stop, not %q", decision)
	}
	if a.Extend == nil {
		return nil, events.FieldError(events.CodeInvalid, field+".extend", "is required: the amounts the budget grows by (input_tokens, output_tokens, total_tokens, cost)")
	}
	x := *a.Extend
	for _, f := range []struct {
		name string
		v    float64
	}{{"input_tokens", float64(x.InputTokens)}, {"output_tokens", float64(x.OutputTokens)}, {"total_tokens", float64(x.TotalTokens)}, {"cost", x.Cost}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return nil, events.FieldError(events.CodeInvalid, field+".extend."+f.name, "must be a positive amount")
		}
	}
	if x.IsZero() {
		return nil, events.FieldError(events.CodeInvalid, field+".extend", "adds nothing: give at least one of input_tokens, output_tokens, total_tokens, cost")
	}
	x.Cost = roundCost(x.Cost)
	out.Extend = x
	return out, nil
}
