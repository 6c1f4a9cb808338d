package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// budgetNode is a node of an app whose agent may answer 10 tokens a call, under a
// user-day budget of 20 output tokens; its slow tool waits for gate.
func budgetNode(t *testing.T, s *postgres.Store, name string, gate <-chan struct{}, entered chan<- struct{}) *fsm.Engine {
	t.Helper()
	model, err := scripted.New([]scripted.Rule{
		{When: scripted.When{AfterTool: "*"}, Reply: "done"},
		{When: scripted.When{Input: "^slow"}, Tools: []scripted.ToolCall{{Name: "slow", Arguments: `{}`}}},
		{Reply: "hi"},
	})
	if err != nil {
		t.Fatal(err)
	}
	slow := functool.MustNew("slow", "waits", func(ctx context.Context, _ noArgs) (any, error) {
		entered <- struct{}{}
		<-gate
		return "ok", nil
	})
	app := &fsm.App{Name: "demo", StartAgent: "main", Budgets: &fsm.Budgets{UserDay: &events.BudgetAmounts{OutputTokens: 20}},
		Agents: map[string]*fsm.Agent{"main": {Name: "main", LLM: "m", Model: model, Tools: []fsm.Tool{slow}, Settings: json.RawMessage(`{"max_tokens":10}`)}}}
	var n atomic.Int64
	e, err := fsm.New(s, []*fsm.App{app}, fsm.Options{Clock: time.Now, NodeID: name, Cluster: s,
		NewID: func() string { return fmt.Sprintf("%s-%06d", name, n.Add(1)) }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestADayBudgetSeesOtherNodesBeforeTheNextCall: a turn on node A waits in a tool
// while node B spends the same user's day; A's next check sees B's calls (its own
// append read them, no round trip of its own) and holds the call that would pass the
// budget — with only what A read when its run began, it would have let it through.
func TestADayBudgetSeesOtherNodesBeforeTheNextCall(t *testing.T) {
	t.Parallel()
	s := postgres.MustOpen(t, postgres.Options{})
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	a, b := budgetNode(t, s, "node-a", gate, entered), budgetNode(t, s, "node-b", gate, entered)
	ctx := context.Background()
	first, err := a.CreateSession(ctx, "demo", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := a.StartTurn(ctx, first.ID, "slow")
	if err != nil {
		t.Fatal(err)
	}
	<-entered // A's first call answered 1 token (0 + 10 ≤ 20)
	second, err := b.CreateSession(ctx, "demo", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // each answers 1 token: the day reaches 11
		res, err := b.RunTurn(ctx, second.ID, "hello")
		if err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("node b's turn %d: %+v %v", i+1, res, err)
		}
	}
	close(gate)
	res, err := slow.Wait()
	if err != nil || res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 || res.Interrupts[0].Kind != events.InterruptBudget {
		t.Fatalf("node a's turn after node b spent the day: %+v %v, want held at the budget", res, err)
	}
	var f struct {
		Spent events.BudgetAmounts `json:"spent"`
	}
	if err := json.Unmarshal(res.Interrupts[0].Arguments, &f); err != nil || f.Spent.OutputTokens != 11 {
		t.Fatalf("held with %s (want 11 output tokens spent: node a's 1 and node b's 10)", res.Interrupts[0].Arguments)
	}
}
