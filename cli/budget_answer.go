package cli

import (
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// budgetAnswerFrom reads a budget question's answer: stop, or
// extend:FIELD=N,FIELD=N (input_tokens, output_tokens, total_tokens, cost).
func budgetAnswerFrom(id, v string) (fsm.Answer, error) {
	if v == events.BudgetStop {
		stop := events.BudgetStop
		return fsm.Answer{Decision: &stop}, nil
	}
	amounts, ok := strings.CutPrefix(v, events.BudgetExtend+":")
	if !ok {
		return fsm.Answer{}, events.FieldError(events.CodeInvalid, "answer", "question %s is a budget: extend:FIELD=N,… or stop, not %q", id, v)
	}
	var x events.BudgetAmounts
	for _, part := range strings.Split(amounts, ",") {
		name, raw, _ := strings.Cut(strings.TrimSpace(part), "=")
		var err error
		switch name {
		case "input_tokens":
			x.InputTokens, err = strconv.ParseInt(raw, 10, 64)
		case "output_tokens":
			x.OutputTokens, err = strconv.ParseInt(raw, 10, 64)
		case "total_tokens":
			x.TotalTokens, err = strconv.ParseInt(raw, 10, 64)
		case "cost":
			x.Cost, err = strconv.ParseFloat(raw, 64)
		default:
			return fsm.Answer{}, events.FieldError(events.CodeInvalid, "answer", "question %s: %q is no amount (input_tokens, output_tokens, total_tokens, cost)", id, name)
		}
		if err != nil {
			return fsm.Answer{}, events.FieldError(events.CodeInvalid, "answer", "question %s: %s must be a number, not %q", id, name, raw)
		}
	}
	return fsm.Answer{Extend: &x}, nil
}
