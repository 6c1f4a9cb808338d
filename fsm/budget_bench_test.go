package fsm_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// BenchmarkBudgetCheck measures what budgets add to the engine step: the step loop of
// BenchmarkEngineStep (200 turns of 10 model+tool steps on one session) with no budget
// and with a turn, a session and a user-day budget (tokens and cost, never reached:
// every call is checked and passes), run in alternation on fresh stores (each arm
// first every other round), several rounds. It reports each arm's per-step median and budgeted/plain, the median of the
// rounds' ratios — without the disk (cpu-only, where the check is the largest share)
// and durable (synchronous=FULL).
func BenchmarkBudgetCheck(b *testing.B) {
	b.Run("cpu-only", func(b *testing.B) { benchBudgetCheck(b, "OFF", 7) })
	b.Run("durable", func(b *testing.B) { benchBudgetCheck(b, "FULL", 3) })
}

func benchBudgetCheck(b *testing.B, synchronous string, rounds int) {
	b.StopTimer()
	generous := &events.BudgetAmounts{InputTokens: 1 << 40, OutputTokens: 1 << 40, TotalTokens: 1 << 41, Cost: 1e9}
	budgets := &fsm.Budgets{Turn: generous, Session: generous, UserDay: generous}
	for i := 0; i < b.N; i++ {
		var plain, budgeted, ratios []float64
		for r := range rounds {
			var p, q float64
			if r%2 == 0 { // each arm goes first every other round: neither pays for running second
				p = stepMedian(b, synchronous, nil)
				q = stepMedian(b, synchronous, budgets)
			} else {
				q = stepMedian(b, synchronous, budgets)
				p = stepMedian(b, synchronous, nil)
			}
			plain, budgeted, ratios = append(plain, p), append(budgeted, q), append(ratios, q/p)
		}
		b.ReportMetric(median(plain)/1e3, "plain-step-us")
		b.ReportMetric(median(budgeted)/1e3, "budgeted-step-us")
		b.ReportMetric(median(ratios), "budgeted/plain")
		b.Logf("%s: per-step median without budgets %.1f µs, with %.1f µs; budgeted/plain per round %.3f",
			synchronous, median(plain)/1e3, median(budgeted)/1e3, ratios)
	}
}

// stepMedian runs the step loop once on a fresh store and returns its per-step
// median in nanoseconds.
func stepMedian(b *testing.B, synchronous string, budgets *fsm.Budgets) float64 {
	store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Synchronous: synchronous})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	agent := benchAgent(b, false)
	app := &fsm.App{Name: "bench", StartAgent: agent.Name, Agents: map[string]*fsm.Agent{agent.Name: agent}, Budgets: budgets}
	if budgets != nil {
		app.Prices = map[string]fsm.Price{agent.LLM: {Input: 0.4, CachedInput: 0.1, Output: 1.6}}
	}
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("b")})
	if err != nil {
		b.Fatal(err)
	}
	perStep := storetest.StepTurns(b, e, nil)
	ns := make([]float64, len(perStep))
	for i, d := range perStep {
		ns[i] = float64(d)
	}
	return median(ns)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
