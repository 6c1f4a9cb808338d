package fsm

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
)

// DefaultOutputEstimate is the output a budget check takes a call to allow when the
// agent's settings set no max_tokens and the budgets no output_estimate.
const DefaultOutputEstimate = 4096

// Budgets bound what model calls may spend in each scope: the turn, the session,
// and the session owner's day in the app (nil: no budget there). An app's budgets
// count every agent's calls; an agent's count its own.
type Budgets struct {
	Turn, Session, UserDay *events.BudgetAmounts
	// OutputEstimate is the output a call is taken to allow when the agent's
	// settings set no max_tokens (0: the app's, else DefaultOutputEstimate).
	OutputEstimate int64
}

func (b *Budgets) limit(scope string) *events.BudgetAmounts {
	if b == nil {
		return nil
	}
	switch scope {
	case events.BudgetTurn:
		return b.Turn
	case events.BudgetSession:
		return b.Session
	default:
		return b.UserDay
	}
}

// Price is what an llm's tokens cost, per million: input, input read from the
// provider's prompt cache, and output (reasoning included).
type Price struct {
	Input, CachedInput, Output float64
}

// Cost is what usage costs at p.
func (p Price) Cost(u events.Usage) float64 {
	cached := min(u.CachedTokens, u.InputTokens)
	c := (float64(u.InputTokens-cached)*p.Input + float64(cached)*p.CachedInput + float64(u.OutputTokens)*p.Output) / 1e6
	return roundCost(c)
}

// roundCost keeps a cost to 1e-9 of its currency, so sums stay exact enough to
// compare and canonical JSON stays short.
func roundCost(c float64) float64 { return math.Round(c*1e9) / 1e9 }

// budgetScopes is the order a check looks at the scopes in.
var budgetScopes = []string{events.BudgetTurn, events.BudgetSession, events.BudgetUserDay}

// hasBudgets says whether any budget applies to the app's calls, whether one of
// them counts a session or a user's day (which the store keeps), and a user's day.
func (a *App) hasBudgets() (any, stored, day bool) {
	for _, b := range append([]*Budgets{a.Budgets}, agentBudgets(a)...) {
		if b != nil {
			any = true
			stored = stored || b.Session != nil || b.UserDay != nil
			day = day || b.UserDay != nil
		}
	}
	return any, stored, day
}

func agentBudgets(a *App) []*Budgets {
	out := make([]*Budgets, 0, len(a.Agents))
	for _, ag := range a.Agents {
		out = append(out, ag.Budgets)
	}
	return out
}

// dayBefore is the date before day (YYYY-MM-DD; day itself when it is none).
func dayBefore(day string) string {
	t, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return day
	}
	return t.AddDate(0, 0, -1).Format(time.DateOnly)
}

// budgetDay is the user_day a moment counts to, in the app's budget time zone. The
// day last named is kept with its bounds: a check within it formats nothing.
func (a *App) budgetDay(t time.Time) string {
	if w := a.dayWindow.Load(); w != nil && !t.Before(w.from) && t.Before(w.to) {
		return w.day
	}
	loc := a.BudgetZone
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := t.In(loc).Date()
	from := time.Date(y, m, d, 0, 0, 0, 0, loc)
	w := &dayWindow{day: from.Format(time.DateOnly), from: from, to: from.AddDate(0, 0, 1)}
	a.dayWindow.Store(w)
	return w.day
}

// dayWindow is a budget day and when it begins and ends.
type dayWindow struct {
	day      string
	from, to time.Time
}

// recordedDay is the Day a ModelCalled keeps: set only when the app's budget time
// zone is not UTC (the read models take the event's UTC day otherwise).
func (a *App) recordedDay(t time.Time) string {
	if a.BudgetZone == nil || a.BudgetZone == time.UTC {
		return ""
	}
	return a.budgetDay(t)
}

// CostOf is what usage of llm costs by the app's price table (0: no price).
func (a *App) CostOf(llm string, u events.Usage) float64 { return a.costOf(llm, u) }

// costOf is what a call of llm with usage costs (0 without a price).
func (a *App) costOf(llm string, u events.Usage) float64 {
	p, ok := a.Prices[llm]
	if !ok {
		return 0
	}
	return p.Cost(u)
}

// maxOutput is the most output a call of ag may produce: its settings' max_tokens
// (max_completion_tokens, max_output_tokens), else the budgets' output estimate.
func (a *App) maxOutput(ag *Agent) int64 {
	if ag.outputCap > 0 {
		return ag.outputCap
	}
	for _, key := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		if v := gjson.GetBytes(ag.Settings, key); v.Exists() && v.Int() > 0 {
			return v.Int()
		}
	}
	if ag.Budgets != nil && ag.Budgets.OutputEstimate > 0 {
		return ag.Budgets.OutputEstimate
	}
	if a.Budgets != nil && a.Budgets.OutputEstimate > 0 {
		return a.Budgets.OutputEstimate
	}
	return DefaultOutputEstimate
}

// requestAmounts is what a call may spend: its counted input tokens and the most
// output it allows, and what they cost at most (no input taken as cached).
func (a *App) requestAmounts(ag *Agent, input int64) events.BudgetAmounts {
	out := a.maxOutput(ag)
	return events.BudgetAmounts{InputTokens: input, OutputTokens: out, TotalTokens: input + out,
		Cost: a.costOf(ag.LLM, events.Usage{InputTokens: input, OutputTokens: out})}
}

// spentAmounts are usage and cost as a budget counts them.
func spentAmounts(u events.Usage, cost float64) events.BudgetAmounts {
	return events.BudgetAmounts{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		TotalTokens: u.InputTokens + u.OutputTokens, Cost: cost}
}

// exceeded names the fields of limit that spent plus request would pass.
func exceeded(limit, spent, request events.BudgetAmounts, set *events.BudgetAmounts) []string {
	var out []string
	if set.InputTokens > 0 && spent.InputTokens+request.InputTokens > limit.InputTokens {
		out = append(out, "input_tokens")
	}
	if set.OutputTokens > 0 && spent.OutputTokens+request.OutputTokens > limit.OutputTokens {
		out = append(out, "output_tokens")
	}
	if set.TotalTokens > 0 && spent.TotalTokens+request.TotalTokens > limit.TotalTokens {
		out = append(out, "total_tokens")
	}
	if set.Cost > 0 && roundCost(spent.Cost+request.Cost) > roundCost(limit.Cost) {
		out = append(out, "cost")
	}
	return out
}

// budgetReason says in words what a BudgetReached found.
func budgetReason(b *events.BudgetReached) string {
	who := "app"
	if b.Level == events.BudgetOfAgent {
		who = "agent " + b.Agent
	}
	var parts []string
	for _, f := range b.Exceeded {
		var spent, req, lim string
		switch f {
		case "input_tokens":
			spent, req, lim = fmt.Sprint(b.Spent.InputTokens), fmt.Sprint(b.Request.InputTokens), fmt.Sprint(b.Limit.InputTokens)
		case "output_tokens":
			spent, req, lim = fmt.Sprint(b.Spent.OutputTokens), fmt.Sprint(b.Request.OutputTokens), fmt.Sprint(b.Limit.OutputTokens)
		case "total_tokens":
			spent, req, lim = fmt.Sprint(b.Spent.TotalTokens), fmt.Sprint(b.Request.TotalTokens), fmt.Sprint(b.Limit.TotalTokens)
		case "cost":
			spent, req, lim = fmt.Sprintf("%g", b.Spent.Cost), fmt.Sprintf("%g", b.Request.Cost), fmt.Sprintf("%g", b.Limit.Cost)
		}
		parts = append(parts, fmt.Sprintf("%s: %s spent + up to %s for this call > %s", f, spent, req, lim))
	}
	scope := b.Scope
	if b.Day != "" {
		scope += " " + b.Day
	}
	return fmt.Sprintf("the %s budget of the %s would be passed by %s's next call of %s (%s)", scope, who, b.Agent, b.LLM, strings.Join(parts, "; "))
}
