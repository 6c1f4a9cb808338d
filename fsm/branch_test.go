package fsm_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

func contents(items []events.Item) string {
	var parts []string
	for _, it := range items {
		parts = append(parts, it.Role+":"+it.Content)
	}
	return strings.Join(parts, " | ")
}

func TestBranchContinuesFromACommittedTurn(t *testing.T) {
	t.Parallel()
	var seen []string
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		last := r.Items[len(r.Items)-1].Content
		seen = append(seen, contents(r.Items))
		if last == "fail" {
			return fsm.ModelResponse{}, fmt.Errorf("provider down")
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "re: " + last}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model})
	first, src := b.turn(t, "one")
	second, err := b.engine.RunTurn(b.ctx, src, "two")
	if err != nil || second.Status != fsm.StatusCompleted {
		t.Fatal(err)
	}
	before, _ := b.store.History(b.ctx, src)
	beforeJSON, _ := json.Marshal(before)

	br, err := b.engine.Branch(b.ctx, src, "bob", fsm.BranchPoint{Turn: first.TurnID}, json.RawMessage(`{"why":"try again"}`))
	if err != nil {
		t.Fatal(err)
	}
	if br.ParentID != src || br.ParentTurn != first.TurnID || br.Owner != "bob" || br.ActiveAgent != "a" {
		t.Fatalf("branch = %+v", br)
	}
	if h, _ := b.store.History(b.ctx, br.ID); contents(h) != "user:one | assistant:re: one" {
		t.Fatalf("branch history before its own turns = %s", contents(h))
	}
	if _, err := b.engine.RunTurn(b.ctx, br.ID, "three"); err != nil {
		t.Fatal(err)
	}
	if got, want := seen[len(seen)-1], "user:one | assistant:re: one | user:three"; got != want {
		t.Fatalf("the branch's model saw %q, want %q", got, want)
	}
	if h, _ := b.store.History(b.ctx, br.ID); contents(h) != "user:one | assistant:re: one | user:three | assistant:re: three" {
		t.Fatalf("branch history = %s", contents(h))
	}
	after, _ := b.store.History(b.ctx, src)
	if afterJSON, _ := json.Marshal(after); string(afterJSON) != string(beforeJSON) {
		t.Fatalf("the source changed:\n%s\n%s", beforeJSON, afterJSON)
	}

	// A branch of the branch, at its own turn, by seq.
	turns, _ := b.store.Turns(b.ctx, br.ID)
	br2, err := b.engine.Branch(b.ctx, br.ID, "bob", fsm.BranchPoint{Seq: turns[0].EndSeq}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.engine.RunTurn(b.ctx, br2.ID, "four"); err != nil {
		t.Fatal(err)
	}
	if h, _ := b.store.History(b.ctx, br2.ID); contents(h) != "user:one | assistant:re: one | user:three | assistant:re: three | user:four | assistant:re: four" {
		t.Fatalf("branch of branch history = %s", contents(h))
	}
	// Turn two of the source is still the source's alone.
	if h, _ := b.store.History(b.ctx, br.ID); strings.Contains(contents(h), "two") || strings.Contains(contents(h), "four") {
		t.Fatalf("branch history leaked: %s", contents(h))
	}

	// Bad branch points.
	failed, err := b.engine.RunTurn(b.ctx, src, "fail")
	if err != nil || failed.Status != fsm.StatusFailed {
		t.Fatalf("failing turn: %v %+v", err, failed)
	}
	for _, tc := range []struct {
		at   fsm.BranchPoint
		code events.Code
	}{
		{fsm.BranchPoint{Turn: failed.TurnID}, events.CodeInvalid}, // it never commits
		{fsm.BranchPoint{Seq: 2}, events.CodeInvalid},              // TurnStarted, not a turn end
		{fsm.BranchPoint{Turn: "nope"}, events.CodeNotFound},
		{fsm.BranchPoint{}, events.CodeInvalid},
		{fsm.BranchPoint{Turn: first.TurnID, Seq: 3}, events.CodeInvalid},
	} {
		if _, err := b.engine.Branch(b.ctx, src, "bob", tc.at, nil); !events.IsCode(err, tc.code) {
			t.Fatalf("branch at %+v: err = %v, want %s", tc.at, err, tc.code)
		}
	}

	// Rebuilding the projections from events gives the same sessions, turns and history.
	incremental, _ := b.store.DumpProjections(b.ctx)
	if _, err := b.store.Rebuild(b.ctx); err != nil {
		t.Fatal(err)
	}
	if rebuilt, _ := b.store.DumpProjections(b.ctx); rebuilt != incremental {
		t.Fatalf("rebuild differs:\n%s\n%s", incremental, rebuilt)
	}
}
