package turnlog_test

import (
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

// TestBudgetConfig: budgets and prices load from agent.yaml (an app's with its time
// zone, an agent's of its own; cached input priced as input unless set); a cost
// budget over an llm without a price, a time zone turnlog does not know, a limit of
// nothing and a time zone on an agent are refused, naming the key.
func TestBudgetConfig(t *testing.T) {
	t.Parallel()
	good := strings.Replace(strings.Replace(valid, "    start_agent: main\n", "    start_agent: main\n    budgets: {turn: {total_tokens: 5000}, user_day: {cost: 2}, timezone: Asia/Tokyo, output_estimate: 300}\n", 1),
		"        provider: scripted\n", "        provider: scripted\n        price: {input: 0.4, output: 1.6}\n", 1)
	good = strings.Replace(good, "        max_turns: 4\n", "        max_turns: 4\n        budgets: {session: {output_tokens: 900}}\n", 1)
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(good), turnlog.Options{Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	app := apps[0]
	if app.Budgets == nil || *app.Budgets.Turn != (events.BudgetAmounts{TotalTokens: 5000}) || app.Budgets.UserDay.Cost != 2 || app.Budgets.Session != nil ||
		app.Budgets.OutputEstimate != 300 || app.BudgetZone == nil || app.BudgetZone.String() != "Asia/Tokyo" {
		t.Fatalf("the app's budgets: %+v zone %v", app.Budgets, app.BudgetZone)
	}
	if p := app.Prices["m"]; p != (fsm.Price{Input: 0.4, CachedInput: 0.4, Output: 1.6}) {
		t.Fatalf("the price: %+v", p)
	}
	if b := app.Agents["main"].Budgets; b == nil || *b.Session != (events.BudgetAmounts{OutputTokens: 900}) || b.Turn != nil {
		t.Fatalf("the agent's budgets: %+v", b)
	}
	refused(t, func(bad string) string {
		return strings.Replace(valid, "    start_agent: main\n", "    start_agent: main\n    budgets: "+bad+"\n", 1)
	}, map[string]string{
		"{session: {cost: 1}}":                                "apps.a.llms.m.price: is required: apps.a.budgets.session.cost counts cost, and agent main calls this llm",
		"{user_day: {output_tokens: 1}, timezone: Mars/Base}": "apps.a.budgets.timezone: is no time zone turnlog knows",
		"{turn: {}}":                "apps.a.budgets.turn",
		"{turn: {total_tokens: 0}}": "apps.a.budgets.turn.total_tokens",
		"{turn: {tokens: 5}}":       "tokens",
	})
	refused(t, func(bad string) string {
		return strings.Replace(valid, "        max_turns: 4\n", "        max_turns: 4\n        budgets: "+bad+"\n", 1)
	}, map[string]string{
		"{turn: {cost: 1}}":  "apps.a.llms.m.price: is required: apps.a.agents.main.budgets.turn.cost counts cost",
		"{timezone: UTC}":    "timezone",
		"{turn: {cost: -1}}": "apps.a.agents.main.budgets.turn.cost",
	})
}
