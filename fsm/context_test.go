package fsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/functool"
	"github.com/turnlog/turnlog/adapters/scripted"
	"github.com/turnlog/turnlog/adapters/sqlite"
	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

const contextRules = "RULES: never push to main; run the build before answering."

type buildArgs struct {
	Turn int `json:"turn"`
}

// longSessionApp is a coding agent with a small window whose build tool prints a
// few lines per run, fails every seventh run, and on the first runs reports the
// identifiers a compaction must keep.
func longSessionApp(t testing.TB, window int) *fsm.App {
	t.Helper()
	build := functool.MustNew("run_build", "runs the build", func(_ context.Context, a buildArgs) (any, error) {
		if a.Turn%7 == 0 {
			return map[string]any{"error": map[string]any{"kind": "build_failed", "message": fmt.Sprintf("build %d failed: E_BUILD_%d in pkg/mod%d/file.go", a.Turn, a.Turn, a.Turn)}}, nil
		}
		log := fmt.Sprintf("compiling pkg/mod%d\nlinking artifact art_%d\nok %d tests passed", a.Turn, a.Turn, a.Turn)
		if a.Turn == 2 {
			log += "\nwarning: retried after E_CONN_RESET from https://proxy.example.com/mod"
		}
		return map[string]any{"exit_code": 0, "stdout": log}, nil
	})
	model, err := scripted.New([]scripted.Rule{
		{When: scripted.When{AfterTool: "run_build", Output: `"error"`}, Reply: "the build failed: {{output.error.message}}"},
		{When: scripted.When{AfterTool: "run_build"}, Reply: "build {{args.turn}} is green: {{output.stdout}}"},
		{When: scripted.When{Input: `^turn (\d+)`}, Tools: []scripted.ToolCall{{Name: "run_build", Arguments: `{"turn": {{match.1}}}`}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ag := &fsm.Agent{Name: "coder", Instructions: contextRules, LLM: "scripted", Model: model, Tools: []fsm.Tool{build},
		Context: &contextmgr.Config{Window: window}}
	return &fsm.App{Name: "test", StartAgent: "coder", Agents: map[string]*fsm.Agent{"coder": ag}}
}

func turnInput(i int) string {
	switch i {
	case 1:
		return "turn 1: the loader lives in internal/config/loader.go and the bad commit is 3f9c2ab7d1e4; fix it"
	}
	return fmt.Sprintf("turn %d: check the module pkg/mod%d and tell me whether it builds", i, i)
}

// seenRequests collects the requests an engine builds, by path, as canonical JSON.
type seenRequests struct {
	mu    sync.Mutex
	order []string
	byKey map[string]fsm.ModelRequest
}

func (s *seenRequests) see(path string, req fsm.ModelRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[string]fsm.ModelRequest{}
	}
	s.order = append(s.order, path)
	s.byKey[path] = req
}

// longSession starts a session of longSessionApp on a fresh store, its requests seen.
func longSession(t *testing.T, window int, seen *seenRequests) (*sqlite.Store, *fsm.Engine, projection.Session) {
	t.Helper()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	e, err := fsm.New(store, []*fsm.App{longSessionApp(t, window)}, fsm.Options{Clock: testClock, NewID: counterIDs("id"), Requests: seen.see})
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.CreateSession(context.Background(), "test", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	return store, e, s
}

func requestTokens(t testing.TB, c *contextmgr.Counter, req fsm.ModelRequest) int {
	t.Helper()
	tools, err := events.Marshal(req.Tools)
	if err != nil {
		t.Fatal(err)
	}
	n := c.Count(req.Instructions) + 4 + c.Count(string(tools))
	for _, it := range req.Items {
		n += c.Count(it.Content) + c.Count(it.Name) + c.Count(string(it.Arguments)) + c.Count(it.Output) + 4
	}
	return n
}

// TestLongSessionStaysInTheWindow: 300 turns with a 2,500-token window. Every
// request the model is sent fits the window and carries the rules, the turn's user
// message and the most recent failed tool result; compactions happened, and the
// history still holds every item.
func TestLongSessionStaysInTheWindow(t *testing.T) {
	t.Parallel()
	const window, turns = 2500, 300
	var seen seenRequests
	store, e, s := longSession(t, window, &seen)
	ctx := context.Background()
	counter, _ := contextmgr.NewCounter(contextmgr.O200K)
	lastFailure := ""
	for i := 1; i <= turns; i++ {
		from := len(seen.order)
		res, err := e.RunTurn(ctx, s.ID, turnInput(i))
		if err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("turn %d: %+v %v", i, res, err)
		}
		for k, path := range seen.order[from:] {
			req := seen.byKey[path]
			if n := requestTokens(t, counter, req); n > window {
				t.Fatalf("turn %d %s: %d tokens, window %d", i, path, n, window)
			}
			if req.Instructions != contextRules {
				t.Fatalf("turn %d %s: rules missing", i, path)
			}
			var outputs strings.Builder
			hasInput := false
			for _, it := range req.Items {
				outputs.WriteString(it.Output + "\n")
				hasInput = hasInput || (it.Role == "user" && it.Content == turnInput(i))
			}
			if !hasInput {
				t.Fatalf("turn %d %s: the turn's user message is missing", i, path)
			}
			want := lastFailure
			if k == 1 && i%7 == 0 { // the second call sees this turn's own failure
				want = fmt.Sprintf("build %d failed: E_BUILD_%d", i, i)
			}
			if want != "" && !strings.Contains(outputs.String(), want) {
				t.Fatalf("turn %d %s: the last failed tool result %q is missing", i, path, want)
			}
		}
		if i%7 == 0 {
			lastFailure = fmt.Sprintf("build %d failed: E_BUILD_%d", i, i)
		}
	}
	evs, _ := store.Events(ctx, s.ID, 0)
	compactions := 0
	for _, ev := range evs {
		if ev.Type == events.TypeContextCompacted {
			compactions++
		}
	}
	history, _ := store.History(ctx, s.ID)
	users := 0
	for _, it := range history {
		if it.Role == "user" {
			users++
		}
	}
	if compactions < 2 || users != turns {
		t.Fatalf("%d compactions, %d user messages in the history", compactions, users)
	}
	t.Logf("%d requests, %d compactions, %d history items", len(seen.order), compactions, len(history))
}

// TestCompactionKeepsIdentifiersAndReplays: the first compaction comes when a request
// needs more than the window; every summary has every section; the identifiers of the
// first turns (a path, a commit hash, an error code, a URL) survive every later
// compaction verbatim; a replay on a fresh store builds byte-identical requests; the
// history keeps every original item.
func TestCompactionKeepsIdentifiersAndReplays(t *testing.T) {
	t.Parallel()
	const window, turns = 1500, 60
	var live seenRequests
	store, e, s := longSession(t, window, &live)
	app, _ := e.App("test")
	ctx := context.Background()
	for i := 1; i <= turns; i++ {
		if res, err := e.RunTurn(ctx, s.ID, turnInput(i)); err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("turn %d: %+v %v", i, res, err)
		}
	}
	recorded, _ := store.Events(ctx, s.ID, 0)
	var compactions []*events.ContextCompacted
	for _, ev := range recorded {
		if ev.Type == events.TypeContextCompacted {
			cc, err := events.DecodeAs[*events.ContextCompacted](ev)
			if err != nil {
				t.Fatal(err)
			}
			compactions = append(compactions, cc)
		}
	}
	if len(compactions) < 3 {
		t.Fatalf("%d compactions", len(compactions))
	}
	if first := compactions[0]; first.TokensBefore <= window || first.TokensAfter > window || first.From != 0 {
		t.Fatalf("first compaction: before %d, after %d, from %d (window %d)", first.TokensBefore, first.TokensAfter, first.From, window)
	}
	for i, cc := range compactions {
		if len(cc.Sections) != len(events.SummarySections) {
			t.Fatalf("compaction %d has %d sections", i, len(cc.Sections))
		}
		for j, s := range cc.Sections {
			if s.Title != events.SummarySections[j] || s.Body == "" {
				t.Fatalf("compaction %d section %d: %+v", i, j, s)
			}
		}
		if i > 0 && cc.From != compactions[i-1].Covers {
			t.Fatalf("compaction %d starts at %d, the previous covered %d", i, cc.From, compactions[i-1].Covers)
		}
	}
	last := contextmgr.RenderSummary(compactions[len(compactions)-1].Sections)
	for _, id := range []string{"internal/config/loader.go", "3f9c2ab7d1e4", "E_CONN_RESET", "https://proxy.example.com/mod"} {
		if !strings.Contains(last, id) {
			t.Errorf("the last summary lost %q:\n%s", id, last)
		}
	}

	// Replay on a fresh store: the same requests, byte for byte.
	var replayed seenRequests
	replayStore, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	re, err := fsm.New(replayStore, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("r"), Requests: replayed.see})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := re.Replay(ctx, recorded); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if len(replayed.order) != len(live.order) {
		t.Fatalf("replay built %d requests, the run %d", len(replayed.order), len(live.order))
	}
	for _, path := range live.order {
		a, _ := json.Marshal(live.byKey[path])
		b, _ := json.Marshal(replayed.byKey[path])
		if string(a) != string(b) {
			t.Fatalf("%s: the replayed request differs", path)
		}
	}

	history, _ := store.History(ctx, s.ID)
	for i := 1; i <= turns; i++ {
		found := false
		for _, it := range history {
			found = found || it.Content == turnInput(i)
		}
		if !found {
			t.Fatalf("history lost turn %d's message", i)
		}
	}
}
