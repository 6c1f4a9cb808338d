package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// SpendStore is what CheckSpend needs of a store.
type SpendStore interface {
	Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error)
	Spend(ctx context.Context, q projection.SpendQuery) (projection.Spend, error)
	Rebuild(ctx context.Context) (int64, error)
	DumpProjections(ctx context.Context) (string, error)
}

// CheckSpend checks the spend read model: each ModelCalled's usage and cost counts
// to its session, agent and budget day (the day it recorded, else the UTC day of its
// time); a session's spend and its owner's day (every session of the app, no other
// user's, no other day) are read by agent; an extension of a session's or a day's
// budget is kept (a turn's is not), and a rebuild folds the same.
func CheckSpend(t *testing.T, s SpendStore, now time.Time) {
	t.Helper()
	ctx := context.Background()
	today := now.UTC().Format(time.DateOnly)
	called := func(turn, path, agent string, u events.Usage, cost float64, day string) events.Event {
		return events.MustNew(turn, path, &events.ModelCalled{Agent: agent, LLM: "m", Usage: u, Cost: cost, Day: day})
	}
	resolved := func(turn, path, scope, level, agent, day string, x events.BudgetAmounts) events.Event {
		return events.MustNew(turn, path, &events.BudgetResolved{InterruptID: "i-" + path, Decision: events.BudgetExtend, Extend: &x, Scope: scope, Level: level, Agent: agent, Day: day, By: "r"})
	}
	append := func(session, owner string, evs ...events.Event) {
		all := append([]events.Event{events.MustNew("", "", &events.SessionCreated{App: "shop", Owner: owner, Agent: "a"}),
			events.MustNew("t1", "", &events.TurnStarted{Input: "go", Agent: "a"})}, evs...)
		// ended, so that every store's turn counters are in its tables
		all = append(all, events.MustNew("t1", "", &events.TurnFailed{ErrorCode: events.CodeModelFailed, Message: "the model went away"}))
		for i := range all {
			all[i].Session = session
		}
		if _, err := s.Append(ctx, session, 0, all); err != nil {
			t.Fatal(err)
		}
	}
	append("spend-1", "alice",
		called("t1", "a/model/1", "a", events.Usage{InputTokens: 100, CachedTokens: 40, OutputTokens: 10, ReasoningTokens: 4}, 0.25, ""),
		called("t1", "a/model/2", "a", events.Usage{InputTokens: 200, OutputTokens: 20}, 0.5, ""),
		called("t1", "b/model/1", "b", events.Usage{InputTokens: 1, OutputTokens: 1}, 0, ""),
		called("t1", "a/model/3", "a", events.Usage{InputTokens: 7, OutputTokens: 7}, 1, "1999-01-01"),
		resolved("t1", "a/model/4/budget", events.BudgetSession, events.BudgetOfApp, "a", "", events.BudgetAmounts{Cost: 2}),
		resolved("t1", "a/model/4/budget/2", events.BudgetUserDay, events.BudgetOfAgent, "a", today, events.BudgetAmounts{OutputTokens: 50}),
		resolved("t1", "a/model/4/budget/3", events.BudgetTurn, events.BudgetOfApp, "a", "", events.BudgetAmounts{TotalTokens: 9}))
	append("spend-2", "alice", called("t1", "a/model/1", "a", events.Usage{InputTokens: 1000, OutputTokens: 100}, 3, ""))
	append("spend-3", "bob", called("t1", "a/model/1", "a", events.Usage{InputTokens: 5000, OutputTokens: 500}, 9, ""))

	check := func(when string) {
		t.Helper()
		sp, err := s.Spend(ctx, projection.SpendQuery{Session: "spend-1", App: "shop", Owner: "alice", Day: today})
		if err != nil {
			t.Fatal(err)
		}
		a := sp.Session["a"]
		if a.Calls != 3 || a.Usage != (events.Usage{InputTokens: 307, CachedTokens: 40, OutputTokens: 37, ReasoningTokens: 4}) || a.Cost != 1.75 || sp.Session["b"].Calls != 1 {
			t.Fatalf("%s: the session's spend: %+v", when, sp.Session)
		}
		if d := sp.Day["a"]; d.Calls != 3 || d.Usage.InputTokens != 1300 || d.Cost != 3.75 || len(sp.Day) != 2 {
			t.Fatalf("%s: the day's spend: %+v", when, sp.Day)
		}
		want := map[string]events.BudgetAmounts{events.BudgetSession: {Cost: 2}, events.BudgetUserDay: {OutputTokens: 50}}
		if len(sp.Extensions) != 2 {
			t.Fatalf("%s: the extensions: %+v", when, sp.Extensions)
		}
		for _, x := range sp.Extensions {
			if x.Amounts != want[x.Scope] || (x.Scope == events.BudgetUserDay && (x.Agent != "a" || x.Day != today)) {
				t.Fatalf("%s: the extensions: %+v", when, sp.Extensions)
			}
		}
		other, err := s.Spend(ctx, projection.SpendQuery{Session: "spend-2", App: "shop", Owner: "alice", Day: "1999-01-01"})
		if err != nil || other.Day["a"].Calls != 1 || other.Day["a"].Cost != 1 || len(other.Extensions) != 0 || other.Session["a"].Cost != 3 {
			t.Fatalf("%s: another day: %+v %v", when, other, err)
		}
	}
	check("as appended")
	before, err := s.DumpProjections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := s.DumpProjections(ctx)
	if err != nil || after != before {
		t.Fatalf("the read models after a rebuild differ (%v):\nbefore:\n%s\nafter:\n%s", err, before, after)
	}
	check("rebuilt")
}
