package inspector_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/turnlog/turnlog/events"
)

const budgetConfig = `
apps:
  demo:
    start_agent: support
    budgets:
      turn: {output_tokens: 30}
    llms:
      m:
        provider: scripted
        price: {input: 1, output: 2}
        rules:
          - reply: "within the budget"
    agents:
      support: {llm: m, instructions: x, settings: {max_tokens: 50}}
`

// TestABudgetExtendedInABrowser: a turn held at its budget shows the figures and a
// form prefilled with an extension; extending it in the browser lets the turn go on,
// and the Spend panel shows the budget, extended, against what the turn spent.
func TestABudgetExtendedInABrowser(t *testing.T) {
	t.Parallel()
	b := setupConfig(t, []byte(budgetConfig), "", false)
	ctx := chromium(t)
	s, _ := b.tl.Engine.CreateSession(context.Background(), "demo", "alice", nil)
	base := b.srv.URL
	step := browserSteps(t, ctx)
	step("sign in and run a turn that meets the budget",
		chromedp.Navigate(base+"/ui/signin"),
		chromedp.SendKeys(chromedp.ID("key"), "k-alice"),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`)),
		chromedp.Navigate(base+"/ui/sessions/"+s.ID),
		chromedp.SendKeys(chromedp.ID("input"), "hello"),
		chromedp.Submit(chromedp.ID("input")),
		chromedp.WaitVisible(chromedp.Search(`//legend[contains(., "Budget reached")]`)))
	prefilled, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`input[name$=".output_tokens"]`)))
	if err != nil || prefilled != "30" {
		t.Fatalf("the extension's output_tokens is prefilled %q (%v), want 30", prefilled, err)
	}
	page, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("table.budget")))
	if err != nil || !strings.Contains(page, "This call, at most") {
		t.Fatalf("the figures: %q %v", page, err)
	}
	step("extend it",
		chromedp.Click(chromedp.CSS(`input[type=radio][value=extend]`)),
		chromedp.Click(chromedp.CSS(`form.answers button[type=submit]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[contains(., "within the budget")]`)))
	b.settled(s.ID)
	evs, _ := b.tl.Store.Events(context.Background(), s.ID, 0)
	var resolved string
	for _, ev := range evs {
		if ev.Type == events.TypeBudgetResolved {
			resolved = string(ev.Data)
		}
	}
	if !strings.Contains(resolved, `"decision":"extend","extend":{"output_tokens":30}`) || !strings.Contains(resolved, `"by":"alice"`) {
		t.Fatalf("the recorded answer: %s", resolved)
	}
	step("reload", chromedp.Navigate(base+"/ui/sessions/"+s.ID), chromedp.WaitVisible(chromedp.ID("spend-h")))
	spend, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("section.spend")))
	if err != nil || !strings.Contains(spend, "of 60") {
		t.Fatalf("the Spend panel: %q %v", spend, err)
	}
}

// browserSteps runs named steps in the browser, failing t at the first that fails.
func browserSteps(t *testing.T, ctx context.Context) func(string, ...chromedp.Action[chromedp.Void]) {
	return func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}
