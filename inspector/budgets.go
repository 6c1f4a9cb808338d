package inspector

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// spendReporter is an engine that reports a session's spend and budgets.
type spendReporter interface {
	Spend(ctx context.Context, session string) (*fsm.SessionSpend, error)
}

// budgetFields are the amounts a budget answer extends, in the form's order.
var budgetFields = []string{"input_tokens", "output_tokens", "total_tokens", "cost"}

// budgetQuestion fills a budget interrupt's part of its form: the figures the check
// used, and the extension as typed, else one as large as the limit on each field
// the call would pass (at least what it lacks).
func budgetQuestion(q *question, form url.Values) {
	var f projection.BudgetFigures
	if json.Unmarshal(q.Arguments, &f) != nil {
		return
	}
	q.Budget = &f
	q.Extend = map[string]string{}
	for _, name := range budgetFields {
		if v := form.Get("extend." + q.ID + "." + name); v != "" {
			q.Extend[name] = v
		}
	}
	if len(q.Extend) > 0 {
		return
	}
	lim, spent, req := amountsOf(f.Limit), amountsOf(f.Spent), amountsOf(f.Request)
	for _, name := range f.Exceeded {
		lacks := spent[name] + req[name] - lim[name]
		v := math.Max(lim[name], lacks)
		if name == "cost" {
			q.Extend[name] = strconv.FormatFloat(v, 'f', -1, 64)
		} else {
			q.Extend[name] = strconv.FormatInt(int64(math.Ceil(v)), 10)
		}
	}
}

func amountsOf(a events.BudgetAmounts) map[string]float64 {
	return map[string]float64{"input_tokens": float64(a.InputTokens), "output_tokens": float64(a.OutputTokens),
		"total_tokens": float64(a.TotalTokens), "cost": a.Cost}
}

// budgetAnswer reads a budget question's answer: extend by the amounts typed, or stop.
func budgetAnswer(form url.Values, id string) (fsm.Answer, error) {
	field := func(name string) string { return "answer " + id + ": " + name }
	switch form.Get("choice." + id) {
	case events.BudgetStop:
		stop := events.BudgetStop
		return fsm.Answer{Decision: &stop}, nil
	case events.BudgetExtend:
	default:
		return fsm.Answer{}, events.FieldError(events.CodeInvalid, field("choice"), "choose extend or stop")
	}
	var x events.BudgetAmounts
	for _, name := range budgetFields {
		raw := strings.TrimSpace(form.Get("extend." + id + "." + name))
		if raw == "" {
			continue
		}
		if name == "cost" {
			v, err := strconv.ParseFloat(raw, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) {
				return fsm.Answer{}, events.FieldError(events.CodeInvalid, field("extend."+name), "must be a positive number, not %q", raw)
			}
			x.Cost = v
			continue
		}
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || v < 0 {
			return fsm.Answer{}, events.FieldError(events.CodeInvalid, field("extend."+name), "must be a whole number of tokens, not %q", raw)
		}
		switch name {
		case "input_tokens":
			x.InputTokens = v
		case "output_tokens":
			x.OutputTokens = v
		default:
			x.TotalTokens = v
		}
	}
	return fsm.Answer{Extend: &x}, nil
}
