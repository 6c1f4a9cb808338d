package fsm_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// seedSession writes a session of `turns` committed turns straight into the log,
// each turn adding `items` conversation items.
func seedSession(b *testing.B, store *sqlite.Store, id string, turns, items int) []string {
	ctx := context.Background()
	evs := []events.Event{events.MustNew("", "", &events.SessionCreated{App: "test", Owner: "alice", Agent: "a"})}
	var turnIDs []string
	for t := 0; t < turns; t++ {
		turn := fmt.Sprintf("t%05d", t)
		turnIDs = append(turnIDs, turn)
		its := []events.Item{events.UserMessage(fmt.Sprintf("question %d", t))}
		for i := 1; i < items-1; i += 2 {
			call := fmt.Sprintf("c%d", i)
			its = append(its, events.Item{Type: events.ItemFunctionCall, CallID: call, Name: "step", Arguments: []byte(`{"i":1}`)},
				events.Item{Type: events.ItemFunctionCallOutput, CallID: call, Output: `{"next":2}`})
		}
		its = append(its, events.AssistantMessage("a", fmt.Sprintf("answer %d", t)))
		evs = append(evs, events.MustNew(turn, "", &events.TurnStarted{Input: its[0].Content, Agent: "a"}),
			events.MustNew(turn, "", &events.TurnCommitted{Items: its, Agent: "a", Output: "answer"}))
	}
	if _, err := store.Append(ctx, id, 0, evs); err != nil {
		b.Fatal(err)
	}
	return turnIDs
}

func benchEngine(b *testing.B) (*sqlite.Store, *fsm.Engine) {
	store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	agent := &fsm.Agent{Name: "a", LLM: "m", Model: modelFunc(func(fsm.ModelRequest) (fsm.ModelResponse, error) {
		return fsm.ModelResponse{}, nil
	})}
	app := &fsm.App{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": agent}}
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("b")})
	if err != nil {
		b.Fatal(err)
	}
	return store, e
}

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// BenchmarkBranch branches a 1-turn and a 1,000-turn session (durable commits): O(1)
// means the two cost the same.
func BenchmarkBranch(b *testing.B) {
	for _, turns := range []int{1, 1000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			store, e := benchEngine(b)
			ids := seedSession(b, store, "src", turns, 4)
			at := fsm.BranchPoint{Turn: ids[len(ids)-1]}
			ctx := context.Background()
			var took []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := e.Branch(ctx, "src", "alice", at, nil); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			b.ReportMetric(float64(percentile(took, 0.5))/1e6, "p50-ms")
			b.ReportMetric(float64(percentile(took, 0.99))/1e6, "p99-ms")
		})
	}
}

// BenchmarkHistoryRead reads a 4,400-item history (200 turns of 22 items) from the
// projection, as a turn does when its session is not cached and the API does.
func BenchmarkHistoryRead(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.db")
	store, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	seedSession(b, store, "long", 200, 22)
	ctx := context.Background()
	// The baseline: the same rows by the same index, read with plain SQL and not decoded.
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	rawRead := func() int {
		rows, err := raw.QueryContext(ctx, `SELECT item FROM proj_history WHERE session_id = ? ORDER BY seq, idx`, "long")
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var item []byte
			rows.Scan(&item)
			n++
		}
		return n
	}
	var took, rawTook []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		h, err := store.History(ctx, "long")
		if err != nil || len(h) != 4400 {
			b.Fatalf("history: %d items, %v", len(h), err)
		}
		took = append(took, time.Since(start))
		start = time.Now()
		if n := rawRead(); n != 4400 {
			b.Fatalf("raw read: %d rows", n)
		}
		rawTook = append(rawTook, time.Since(start))
	}
	b.ReportMetric(float64(percentile(took, 0.5))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(took, 0.99))/1e6, "p99-ms")
	b.ReportMetric(float64(percentile(rawTook, 0.5))/1e6, "raw-read-p50-ms")
	b.ReportMetric(float64(percentile(took, 0.5))/float64(percentile(rawTook, 0.5)), "p50/raw")
}
