package fsm

import (
	"context"
	"math"
	"strings"

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
func resolveBudget(q *askedQuestion, a Answer, user, field string, extendBy string, operator bool) (events.Payload, error) {
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
	if !operator && extendBy == ExtendByOperator {
		return nil, events.FieldError(events.CodePolicyDenied, field+".extend", "this app's budgets are extended by an operator only (an admin key, the inspector signed in with one, or turnlog resume on the database); the turn may be stopped")
	}
	x := *a.Extend
	x.Cost = roundCost(x.Cost)
	limited := br.Limit // the fields the budget limits (a limit in force is never 0 where set)
	for _, f := range []struct {
		name    string
		v, most float64
		isLimit bool
	}{{"input_tokens", float64(x.InputTokens), MaxExtendTokens, limited.InputTokens > 0}, {"output_tokens", float64(x.OutputTokens), MaxExtendTokens, limited.OutputTokens > 0},
		{"total_tokens", float64(x.TotalTokens), MaxExtendTokens, limited.TotalTokens > 0}, {"cost", x.Cost, MaxExtendCost, limited.Cost > 0}} {
		switch {
		case f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v > f.most:
			return nil, events.FieldError(events.CodeInvalid, field+".extend."+f.name, "must be an amount from 0 to %g", f.most)
		case f.v > 0 && !f.isLimit:
			return nil, events.FieldError(events.CodeInvalid, field+".extend."+f.name, "is not limited by this budget (it limits %s)", limitedFields(limited))
		}
	}
	if x.IsZero() {
		return nil, events.FieldError(events.CodeInvalid, field+".extend", "adds nothing: give at least one of %s", limitedFields(limited))
	}
	out.Extend = &x
	return out, nil
}

// The most one answer may extend a budget by: past them a limit would not stay exact.
const (
	MaxExtendTokens = 1e15
	MaxExtendCost   = 1e12
)

// limitedFields names the fields a limit sets.
func limitedFields(l events.BudgetAmounts) string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"input_tokens", l.InputTokens > 0}, {"output_tokens", l.OutputTokens > 0}, {"total_tokens", l.TotalTokens > 0}, {"cost", l.Cost > 0}} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return strings.Join(out, ", ")
}

// Who may extend an app's budgets (App.BudgetExtendBy).
const (
	ExtendByOwner    = "owner"    // whoever may answer the session's questions ("" too)
	ExtendByOperator = "operator" // an operator only: see AsOperator
)

type operatorKey struct{}

// AsOperator marks ctx as an operator's request (an admin key, an admin signed in to
// the inspector, turnlog resume on the database): it may extend budgets an app keeps
// for operators.
func AsOperator(ctx context.Context) context.Context {
	return context.WithValue(ctx, operatorKey{}, true)
}

// isOperator says whether ctx is an operator's request.
func isOperator(ctx context.Context) bool { v, _ := ctx.Value(operatorKey{}).(bool); return v }
