package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/events"
)

// BenchmarkAppendVsRawInsert: 50 sessions append single small events at once through
// the store, beside the same rows written by the same number of connections as plain
// autocommitted INSERTs into a fresh schema's events table (one INSERT, one COMMIT
// each) in the same run; appends/raw is the share of the database's own pace the
// store keeps.
func BenchmarkAppendVsRawInsert(b *testing.B) {
	const sessions = 50
	ctx := context.Background()
	ev := events.MustNew("t", "a/tool/c", &events.ToolResulted{CallID: "c", Tool: "noop", Output: `{"ok":true}`})
	created := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "o", Agent: "main"})
	per := b.N/sessions + 1
	store := postgres.MustOpen(b, postgres.Options{MaxConns: sessions})
	for i := range sessions {
		if _, err := store.Append(ctx, fmt.Sprintf("s%03d", i), 0, []events.Event{created}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	appends := concurrently(b, sessions, per, func(i int, seq int64) error {
		_, err := store.Append(ctx, fmt.Sprintf("s%03d", i), seq, []events.Event{ev})
		return err
	})
	b.StopTimer()

	dsn := postgres.TestSchemaDSN(b)
	postgres.MustOpenOn(b, dsn) // the schema's tables
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(sessions)
	db.SetMaxIdleConns(sessions)
	at := time.Now().UTC().Format(time.RFC3339Nano)
	b.StartTimer()
	raw := concurrently(b, sessions, per, func(i int, seq int64) error {
		_, err := db.ExecContext(ctx, `INSERT INTO events (session_id, seq, turn_id, type, path, v, data, blob_hash, at) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8)`,
			fmt.Sprintf("s%03d", i), seq, ev.Turn, ev.Type, ev.Path, ev.V, string(ev.Data), at)
		return err
	})
	b.StopTimer()
	b.ReportMetric(appends, "appends/s")
	b.ReportMetric(raw, "raw-inserts/s")
	b.ReportMetric(appends/raw, "appends/raw")
}

// concurrently runs write(i, seq) for seq 1…per in each of n goroutines and returns
// writes/s.
func concurrently(b *testing.B, n, per int, write func(i int, seq int64) error) float64 {
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := int64(1); seq <= int64(per); seq++ {
				if err := write(i, seq); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n*per) / time.Since(start).Seconds()
}
