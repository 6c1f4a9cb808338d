package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/events"
)

// BenchmarkAppendConcurrent appends single small events from 50 sessions at once, each
// caller waiting for its durable commit (synchronous=FULL): group commit lets one fsync
// serve many callers. The baseline is the same work with one session (no grouping).
// adapters/stores/postgres runs the same benchmark.
func BenchmarkAppendConcurrent(b *testing.B) {
	storetest.BenchAppends(b, storetest.Harness{Open: func(t testing.TB) storetest.Store {
		s, _ := sqlite.MustOpen(t, sqlite.Options{})
		return s
	}})
}

// BenchmarkStoreEngineSteps is the engine's step, 200 turns of 10, on a durable SQLite
// file: the same code adapters/stores/postgres runs (storetest.BenchEngineSteps).
func BenchmarkStoreEngineSteps(b *testing.B) {
	storetest.BenchEngineSteps(b, storetest.Harness{Open: func(t testing.TB) storetest.Store {
		s, _ := sqlite.MustOpen(t, sqlite.Options{})
		return s
	}})
}

// BenchmarkRebuild folds a log of ~100k events (10-step turns) into fresh projections
// and reports events/s, beside a baseline that only scans the same rows and decodes
// their JSON in Go.
func BenchmarkRebuild(b *testing.B) {
	ctx := context.Background()
	store, path := sqlite.MustOpen(b, sqlite.Options{Synchronous: "OFF"})
	const sessions, turnsPerSession = 100, 40
	for s := 0; s < sessions; s++ {
		id := fmt.Sprintf("s%03d", s)
		seq := int64(0)
		batch := []events.Event{events.MustNew("", "", &events.SessionCreated{App: "bench", Owner: "o", Agent: "a"})}
		for t := 0; t < turnsPerSession; t++ {
			turn := fmt.Sprintf("t%03d", t)
			batch = append(batch, events.MustNew(turn, "", &events.TurnStarted{Input: "go", Agent: "a"}))
			var items []events.Item
			for step := 1; step <= 10; step++ {
				call := fmt.Sprintf("c%d", step)
				args := json.RawMessage(fmt.Sprintf(`{"i":%d}`, step))
				batch = append(batch,
					events.MustNew(turn, fmt.Sprintf("a/model/%d", step), &events.ModelCalled{Agent: "a", LLM: "m", RequestHash: "h",
						Response: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: call, Name: "step", Arguments: args}}}}),
					events.MustNew(turn, "a/tool/"+call, &events.ToolScheduled{CallID: call, Tool: "step", Arguments: args}),
					events.MustNew(turn, "a/tool/"+call, &events.ToolResulted{CallID: call, Tool: "step", Output: `{"next":1}`}))
				items = append(items, events.Item{Type: events.ItemFunctionCall, CallID: call, Name: "step", Arguments: args},
					events.Item{Type: events.ItemFunctionCallOutput, CallID: call, Output: `{"next":1}`})
			}
			items = append(items, events.AssistantMessage("a", "done"))
			batch = append(batch, events.MustNew(turn, "", &events.TurnCommitted{Items: items, Agent: "a", Output: "done"}))
		}
		if _, err := store.Append(ctx, id, seq, batch); err != nil {
			b.Fatal(err)
		}
	}
	total, _ := store.CountEvents(ctx)

	// Baseline: a raw scan with Go JSON decoding of every row, same file, same run.
	db, err := sql.Open("sqlite", "file:"+filepath.Clean(path)+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	rows, err := db.Query(`SELECT data FROM events ORDER BY id`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var raw []byte
		var v map[string]any
		rows.Scan(&raw)
		if err := json.Unmarshal(raw, &v); err != nil {
			b.Fatal(err)
		}
	}
	rows.Close()
	scanRate := float64(total) / time.Since(start).Seconds()

	b.ResetTimer()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		n, err := store.Rebuild(ctx)
		elapsed += time.Since(start)
		if err != nil || n != total {
			b.Fatalf("rebuild folded %d of %d events: %v", n, total, err)
		}
	}
	rate := float64(total) * float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(scanRate, "baseline-scan-events/s")
	b.ReportMetric(rate/scanRate, "rebuild/scan")
}
