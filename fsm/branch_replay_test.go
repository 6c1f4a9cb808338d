package fsm_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// TestABranchReplaysFromItsRecording: a branch of a branch's recording holds its
// sources' logs up to each branch point, then its own; replayed on an empty store it
// matches whole. A recording that lacks a source, reorders one, or has a source that
// no longer matches the code is refused or diverges.
func TestABranchReplaysFromItsRecording(t *testing.T) {
	t.Parallel()
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		var seen []string
		for _, it := range r.Items {
			if it.Role == "user" {
				seen = append(seen, it.Content)
			}
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "heard " + strings.Join(seen, ", ")}}, nil
	})
	b := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: model})
	first, src := b.turn(t, "one")
	if _, err := b.engine.RunTurn(b.ctx, src, "two"); err != nil {
		t.Fatal(err)
	}
	br, err := b.engine.Branch(b.ctx, src, "alice", fsm.BranchPoint{Turn: first.TurnID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.engine.RunTurn(b.ctx, br.ID, "three"); err != nil {
		t.Fatal(err)
	}
	turns, _ := b.store.Turns(b.ctx, br.ID)
	br2, err := b.engine.Branch(b.ctx, br.ID, "alice", fsm.BranchPoint{Seq: turns[0].EndSeq}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := b.engine.RunTurn(b.ctx, br2.ID, "four"); err != nil || res.Output != "heard one, three, four" {
		t.Fatalf("the branch of the branch: %+v %v", res, err)
	}

	recorded, err := b.engine.Recording(b.ctx, br2.ID)
	if err != nil {
		t.Fatal(err)
	}
	srcTurns, _ := b.store.Turns(b.ctx, src)
	var order []string
	for i, ev := range recorded {
		if i == 0 || ev.Session != recorded[i-1].Session {
			order = append(order, ev.Session)
		}
		if ev.Session == src && ev.Seq > srcTurns[0].EndSeq {
			t.Fatalf("the recording holds the source past its branch point: seq %d %s", ev.Seq, ev.Type)
		}
	}
	if strings.Join(order, " ") != strings.Join([]string{src, br.ID, br2.ID}, " ") {
		t.Fatalf("the recording's sessions: %v", order)
	}
	replay := func(rec []events.Event) (*fsm.ReplayReport, error) {
		store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
		app, _ := b.engine.App("test")
		e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("r")})
		if err != nil {
			t.Fatal(err)
		}
		return e.Replay(b.ctx, rec)
	}
	rep, err := replay(recorded)
	if err != nil || rep.Session != br2.ID || rep.Events != len(recorded) || rep.Turns != 3 {
		t.Fatalf("replay: %+v %v (%d events)", rep, err, len(recorded))
	}

	own, _ := b.store.Events(b.ctx, br2.ID, 0)
	if _, err := replay(own); !events.IsCode(err, events.CodeCorruptLog) || !strings.Contains(err.Error(), "sessions it was branched from") {
		t.Fatalf("the branch's log alone: %v", err)
	}
	var withoutMiddle, reordered []events.Event
	for _, ev := range recorded {
		if ev.Session != br.ID {
			withoutMiddle = append(withoutMiddle, ev)
		}
	}
	if _, err := replay(withoutMiddle); !events.IsCode(err, events.CodeCorruptLog) || !strings.Contains(err.Error(), "does not reach") {
		t.Fatalf("without the middle session: %v", err)
	}
	for _, ev := range recorded {
		if ev.Session == br.ID {
			reordered = append(reordered, ev)
		}
	}
	for _, ev := range recorded {
		if ev.Session != br.ID {
			reordered = append(reordered, ev)
		}
	}
	if _, err := replay(reordered); !events.IsCode(err, events.CodeCorruptLog) {
		t.Fatalf("sources after the branch: %v", err)
	}
	// The source's recorded answer is not what the code says now: the replay
	// diverges there, in the source.
	tampered := append([]events.Event(nil), recorded...)
	for i, ev := range tampered {
		if ev.Session == src && ev.Type == events.TypeModelCalled {
			var mc map[string]any
			json.Unmarshal(ev.Data, &mc)
			mc["request_hash"] = "0000"
			tampered[i].Data, _ = json.Marshal(mc)
			break
		}
	}
	if _, err := replay(tampered); !events.IsCode(err, events.CodeNondeterminism) {
		t.Fatalf("a source that no longer matches: %v", err)
	}
}
