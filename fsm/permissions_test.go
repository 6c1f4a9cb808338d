package fsm_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// seenInstructions keeps the instructions of every request a model was sent.
type seenInstructions struct {
	mu   sync.Mutex
	sent []string
}

func (s *seenInstructions) see(_ string, r fsm.ModelRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, r.Instructions)
}

func (s *seenInstructions) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// TestTheModelKnowsTheRules: every request of a turn of an app with a tool policy
// carries the policy's permissions section after the instructions, and its
// TurnStarted says so (request_shape 1); a turn recorded before the section existed
// (no request_shape) is driven again — replayed — with the instructions alone, and
// replays unchanged. A denied call tells the model why and what to do instead.
func TestTheModelKnowsTheRules(t *testing.T) {
	t.Parallel()
	sh := &shellTool{}
	app := grantApp(sh, policy.Rule{Name: "no-push", Decision: policy.Deny, Commands: []string{"git push"}, Alternative: "commit; a person pushes"})
	app.Agents["a"].Instructions = "You fix bugs."
	seen := &seenInstructions{}
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: testClock, NewID: counterIDs("id"), Requests: seen.see})
	if err != nil {
		t.Fatal(err)
	}
	b := testBundle{ctx: t.Context(), store: store, engine: e}
	s, _ := e.CreateSession(b.ctx, "test", "alice", nil)
	res := runIn(t, b, e, s.ID, "git push origin main", nil)
	want := "You fix bugs.\n\n" + app.ToolPolicy.Permissions("a")
	sent := seen.all()
	if len(sent) != 2 || sent[0] != want || sent[1] != want {
		t.Fatalf("the requests' instructions:\n%q\nwant\n%q", sent, want)
	}
	for _, phrase := range []string{"Mode workspace-write", "Network: off", "A person is asked before: deleting", "no-push (`git push`) — instead: commit; a person pushes"} {
		if !strings.Contains(want, phrase) {
			t.Errorf("the section lacks %q:\n%s", phrase, want)
		}
	}
	if !strings.Contains(res.Output, "instead: commit; a person pushes") {
		t.Fatalf("the refusal does not say what to do instead: %s", res.Output)
	}
	runIn(t, b, e, s.ID, "cat .env", nil)
	if pd := lastDecision(t, b, s.ID); pd.Decision != "deny" || !strings.Contains(pd.Alternative, "tell the user") {
		t.Fatalf("a secret's refusal says nothing to do instead: %+v", pd)
	}
	recorded, _ := store.Events(b.ctx, s.ID, 0)
	if ts, _ := events.DecodeAs[*events.TurnStarted](recorded[1]); ts.RequestShape != fsm.RequestShapePermissions {
		t.Fatalf("TurnStarted: %+v", ts)
	}

	replay := func(rec []events.Event) []string {
		t.Helper()
		seen := &seenInstructions{}
		rs, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
		again := grantApp(&shellTool{}, app.ToolPolicy.Rules...)
		again.Agents["a"].Instructions = "You fix bugs."
		re, _ := fsm.New(rs, []*fsm.App{again}, fsm.Options{Clock: time.Now, NewID: counterIDs("r"), Requests: seen.see})
		if _, err := re.Replay(b.ctx, rec); err != nil {
			t.Fatalf("replay: %v", err)
		}
		return seen.all()
	}
	if got := replay(recorded); len(got) != 4 || got[0] != want {
		t.Fatalf("a replay of the new shape sent %q", got)
	}
	// The same session as turnlog recorded it before the section: no request_shape.
	var before []events.Event
	for _, ev := range recorded {
		if ev.Type == events.TypeTurnStarted {
			ev.Data = bytes.Replace(ev.Data, []byte(`,"request_shape":1`), nil, 1)
		}
		before = append(before, ev)
	}
	if got := replay(before); len(got) != 4 || got[0] != "You fix bugs." || got[3] != "You fix bugs." {
		t.Fatalf("a turn recorded before the section was sent %q", got)
	}
}
