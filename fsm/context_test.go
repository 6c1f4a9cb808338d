package fsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/functool"
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
	byKey map[string]fsm.ModelRequest // the newest request at each path
	all   []fsm.ModelRequest          // every request, in order
}

func (s *seenRequests) see(path string, req fsm.ModelRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey == nil {
		s.byKey = map[string]fsm.ModelRequest{}
	}
	s.order = append(s.order, path)
	s.byKey[path] = req
	s.all = append(s.all, req)
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

// requestJSON is everything a request sends to a model, as JSON.
func requestJSON(t *testing.T, r fsm.ModelRequest) string {
	t.Helper()
	raw, err := json.Marshal(struct {
		LLM, Agent, Instructions, Purpose string
		Tools                             []fsm.ToolSpec
		Settings                          json.RawMessage
		Items                             []events.Item
	}{r.LLM, r.Agent, r.Instructions, r.Purpose, r.Tools, r.Settings, r.Items})
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
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
		if i%7 == 0 && !strings.HasPrefix(res.Output, fmt.Sprintf("the build failed: build %d failed", i)) {
			t.Fatalf("turn %d: the model did not read the tool's own output: %q", i, res.Output)
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
	compactions, recorded := 0, 0
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeContextCompacted:
			compactions++
		case events.TypeModelCalled: // each recorded call, in order, is a request inspected above
			mc, _ := events.DecodeAs[*events.ModelCalled](ev)
			if recorded >= len(seen.all) || mc.Parts.Items != len(seen.all[recorded].Items) {
				t.Fatalf("%s: the recorded call does not match the inspected request %d", ev.Path, recorded)
			}
			recorded++
		}
	}
	if recorded != len(seen.order) {
		t.Fatalf("%d model calls recorded, %d requests inspected", recorded, len(seen.order))
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
	if len(replayed.all) != len(live.all) || len(live.all) < 2*turns {
		t.Fatalf("replay built %d requests, the run %d", len(replayed.all), len(live.all))
	}
	for i := range live.all {
		a, b := requestJSON(t, live.all[i]), requestJSON(t, replayed.all[i])
		if len(a) < 100 || a != b || live.order[i] != replayed.order[i] {
			t.Fatalf("request %d (%s): the replayed request differs:\n%s\n%s", i, live.order[i], a, b)
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

// TestCompactOnRequest: a compaction asked for summarises every committed item in a
// turn of its own (one summary item, the identifiers kept); the next request — also
// on a new engine over the same file — carries the summary and the latest user
// messages instead of the items; asking again at once is a conflict, an agent with no
// window is invalid; the session replays.
func TestCompactOnRequest(t *testing.T) {
	t.Parallel()
	var seen seenRequests
	store, e, s := longSession(t, 100000, &seen)
	ctx := context.Background()
	for i := 1; i <= 5; i++ {
		if res, err := e.RunTurn(ctx, s.ID, turnInput(i)); err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("turn %d: %+v %v", i, res, err)
		}
	}
	res, err := e.Compact(ctx, s.ID)
	if err != nil || res.Status != fsm.StatusCompleted || len(res.Items) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	sum := res.Items[0]
	if sum.Type != events.ItemContextSummary || sum.Covers != 20 || !strings.Contains(sum.Content, "3f9c2ab7d1e4") || !strings.Contains(sum.Content, "## Remaining Work") {
		t.Fatalf("summary item: %+v", sum)
	}
	if _, err := e.Compact(ctx, s.ID); events.CodeOf(err) != events.CodeConflict {
		t.Fatalf("compact twice: %v", err)
	}
	all, err := store.Audit(ctx, s.ID)
	var audit []projection.AuditEntry
	for _, a := range all {
		if a.Kind != "result" {
			audit = append(audit, a)
		}
	}
	if err != nil || len(audit) != 1 || audit[0].Kind != "compaction" || audit[0].Outcome != "summarised 20 items" || !strings.HasPrefix(audit[0].Reason, "agent coder, items 0–20") {
		t.Fatalf("audit: %+v %v", audit, err)
	}
	// A new engine over the same store reads the summary back from the history.
	var after seenRequests
	e2, err := fsm.New(store, []*fsm.App{longSessionApp(t, 100000)}, fsm.Options{Clock: testClock, NewID: counterIDs("b"), Requests: after.see})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e2.RunTurn(ctx, s.ID, turnInput(6)); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("turn 6: %+v %v", res, err)
	}
	first := after.byKey[after.order[0]]
	var contents []string
	for _, it := range first.Items {
		contents = append(contents, it.Content)
	}
	if len(first.Items) != 5 || !strings.HasPrefix(contents[0], "<context_summary") || contents[1] != turnInput(3) || contents[4] != turnInput(6) {
		t.Fatalf("the request after compaction: %q", contents)
	}
	history, _ := store.History(ctx, s.ID)
	if len(history) != 25 {
		t.Fatalf("history holds %d items, want 20 + the summary + 4", len(history))
	}
	b := testBundle{ctx: ctx, store: store, engine: e2}
	b.replayFresh(t, s.ID)

	plain := setup(t, &fsm.Agent{Name: "a", LLM: "m", Model: modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "hi"}}, nil
	})})
	_, sid := plain.turn(t, "hello")
	if _, err := plain.engine.Compact(ctx, sid); events.CodeOf(err) != events.CodeInvalid || !strings.Contains(err.Error(), "context.window") {
		t.Fatalf("compact without a window: %v", err)
	}
}
