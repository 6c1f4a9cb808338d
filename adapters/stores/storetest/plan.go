package storetest

import (
	"context"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// PlanStore is what CheckPlan needs of a store.
type PlanStore interface {
	Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error)
	Plan(ctx context.Context, session string) (*projection.Plan, error)
}

// CheckPlan checks that a store's plan is a session's latest update_plan that
// succeeded (a refused one changes nothing), and that a branch brings the plan its
// source had at the branch point.
func CheckPlan(t *testing.T, s PlanStore) {
	t.Helper()
	ctx := context.Background()
	result := func(call, output string, failed bool) events.Event {
		return events.MustNew("t1", "a/tool/"+call, &events.ToolResulted{CallID: call, Tool: "update_plan", Output: output, IsError: failed})
	}
	src := []events.Event{
		events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "a"}),
		events.MustNew("t1", "", &events.TurnStarted{Input: "go", Agent: "a"}),
		result("c1", `{"goal":"g","items":[{"status":"in_progress","text":"one"}]}`, false),
		events.MustNew("t1", "a/tool/c2", &events.ToolResulted{CallID: "c2", Tool: "other", Output: `{"goal":"not a plan","items":[]}`}),
		result("c3", `{"goal":"g","items":[{"status":"done","text":"one"},{"status":"pending","text":"two"}]}`, false),
		result("c4", `{"error":{"kind":"failed","message":"2 steps are in_progress"}}`, true),
	}
	for i := range src {
		src[i].Session = "plan-src"
	}
	if p, err := s.Plan(ctx, "plan-src"); err == nil && p != nil {
		t.Fatalf("a session that does not exist has a plan: %+v", p)
	}
	if _, err := s.Append(ctx, "plan-src", 0, src); err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(ctx, "plan-src")
	if err != nil || p == nil || p.Seq != 5 || p.Goal != "g" || len(p.Items) != 2 || p.Items[1] != (projection.PlanItem{Text: "two", Status: "pending"}) || p.Session != "plan-src" {
		t.Fatalf("the plan: %+v %v", p, err)
	}
	branch := events.MustNew("", "", &events.SessionBranched{SourceSession: "plan-src", SourceSeq: 3, App: "demo", Owner: "alice", Agent: "a"})
	branch.Session = "plan-branch"
	if _, err := s.Append(ctx, "plan-branch", 0, []events.Event{branch}); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Plan(ctx, "plan-branch"); err != nil || p == nil || p.Seq != 3 || p.Items[0].Status != "in_progress" || p.Session != "plan-src" {
		t.Fatalf("the branch's plan: %+v %v", p, err)
	}
}
