package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/openai"
	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/memory"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

func clock() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }

func ids(prefix string) events.IDFunc {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%s%04d", prefix, n.Add(1)) }
}

func memoryApp(t *testing.T, store memory.Store, emb memory.Embedder) *fsm.App {
	t.Helper()
	model, err := scripted.New([]scripted.Rule{
		{When: scripted.When{AfterTool: "memory_save"}, Reply: "saved {{output.id}} {{output.saved}}"},
		{When: scripted.When{AfterTool: "memory_search"}, Reply: "found: {{output.memories}}"},
		{When: scripted.When{Input: `^remember (.+)`}, Tools: []scripted.ToolCall{{Name: "memory_save", Arguments: `{"text": "{{match.1}}", "label": "pets"}`}}},
		{When: scripted.When{Input: `^recall (.+)`}, Tools: []scripted.ToolCall{{Name: "memory_search", Arguments: `{"query": "{{match.1}}"}`}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ag := &fsm.Agent{Name: "assistant", LLM: "scripted", Model: model, Tools: memory.Tools(store, emb, clock)}
	return &fsm.App{Name: "pa", StartAgent: "assistant", Agents: map[string]*fsm.Agent{"assistant": ag}}
}

func turn(t *testing.T, e *fsm.Engine, owner, input string) (string, *fsm.Result) {
	t.Helper()
	ctx := context.Background()
	s, err := e.CreateSession(ctx, "pa", owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.RunTurn(ctx, s.ID, input)
	if err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("%s: %+v %v", input, res, err)
	}
	return s.ID, res
}

// TestMemoryAcrossSessions: what alice saves in one session her next session finds;
// bob's does not. The turn that saved it, replayed, writes nothing, and the save run
// again as the same activity (a crash re-run) finds its row instead of adding one.
func TestMemoryAcrossSessions(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: clock, Synchronous: "OFF"})
	app := memoryApp(t, store, nil)
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: clock, NewID: ids("id")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sessionA, saved := turn(t, e, "alice", "remember my cat is called Miso")
	if saved.Output != "saved 1 true" {
		t.Fatalf("save: %s", saved.Output)
	}
	if _, found := turn(t, e, "alice", "recall what is my cat called"); !strings.Contains(found.Output, "my cat is called Miso") {
		t.Fatalf("alice's next session: %s", found.Output)
	}
	if _, found := turn(t, e, "bob", "recall cat Miso"); found.Output != "found: []" {
		t.Fatalf("bob found: %s", found.Output)
	}

	rows := func() int {
		hits, err := store.SearchMemory(ctx, "pa", "alice", "Miso", 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	recorded, _ := store.Events(ctx, sessionA, 0)
	replayStore, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	re, err := fsm.New(replayStore, []*fsm.App{memoryApp(t, store, nil)}, fsm.Options{Clock: clock, NewID: ids("r")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := re.Replay(ctx, recorded); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if n := rows(); n != 1 {
		t.Fatalf("%d rows after the replay", n)
	}
	var sched *events.ToolScheduled
	var at events.Event
	for _, ev := range recorded {
		if ev.Type == events.TypeToolScheduled {
			sched, _ = events.DecodeAs[*events.ToolScheduled](ev)
			at = ev
		}
	}
	callCtx := fsm.WithCallInfo(ctx, fsm.CallInfo{Session: sessionA, Turn: at.Turn, Agent: "assistant", Path: at.Path})
	out, err := app.Agents["assistant"].Tools[0].Call(callCtx, sched.Arguments)
	if err != nil || string(out) != `{"id":1,"saved":false}` || rows() != 1 {
		t.Fatalf("the same save again: %s %v, %d rows", out, err, rows())
	}
}

// fakeEmbeddings is an OpenAI-compatible /embeddings endpoint whose vectors put
// words of one meaning on one axis.
func fakeEmbeddings(t *testing.T, calls *atomic.Int64) *httptest.Server {
	axes := map[string]int{"cat": 0, "feline": 0, "kitten": 0, "miso": 0, "dog": 1, "canine": 1, "rex": 1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "embed-small" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var data []map[string]any
		for i, text := range req.Input {
			v := make([]float64, 3)
			v[2] = 0.1
			for _, w := range strings.Fields(strings.ToLower(text)) {
				if a, ok := axes[strings.Trim(w, ".,?")]; ok {
					v[a]++
				}
			}
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model, "usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHybridSearchFindsByMeaning: with an embeddings provider (a fake
// OpenAI-compatible server, the real openai-go client), a query sharing no word with
// a memory still finds it first, by meaning.
func TestHybridSearchFindsByMeaning(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	emb, err := openai.NewEmbedder(openai.Config{Model: "embed-small", BaseURL: srv.URL + "/v1/", APIKey: "test"})
	if err != nil {
		t.Fatal(err)
	}
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: clock, Synchronous: "OFF"})
	e, err := fsm.New(store, []*fsm.App{memoryApp(t, store, emb)}, fsm.Options{Clock: clock, NewID: ids("id")})
	if err != nil {
		t.Fatal(err)
	}
	turn(t, e, "alice", "remember the dog is called Rex")
	turn(t, e, "alice", "remember my cat is called Miso")
	_, found := turn(t, e, "alice", "recall feline")
	if !strings.HasPrefix(found.Output, "found: [{") || !strings.Contains(found.Output, "Miso") ||
		strings.Index(found.Output, "Miso") > strings.Index(found.Output+"Rex", "Rex") {
		t.Fatalf("hybrid search: %s", found.Output)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d embeddings calls, want 3 (two saves, one query)", calls.Load())
	}
}
