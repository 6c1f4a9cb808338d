package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
)

// BenchmarkAppendVsRawInsert measures, in one run, turnlog's durable appends from 50
// sessions at once (each caller waiting for its commit) and the same rows written by
// plain SQL into a table like events — turnlog's own table, with its unique index,
// triggers and json_valid check, the same row bytes, 50 sessions interleaved, the
// same pragmas — 100 rows to a commit, and 50: the most 50 callers, each waiting
// for its own commit, can ever share. The ratios say how close the store comes to
// what SQLite does with the same rows.
func BenchmarkAppendVsRawInsert(b *testing.B) {
	const sessions, rowsPerCommit = 50, 100
	ctx := context.Background()
	ev := events.MustNew("t", "a/tool/c", &events.ToolResulted{CallID: "c", Tool: "noop", Output: `{"ok":true}`})
	created := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "o", Agent: "main"})
	per := b.N/sessions + 1
	total := per * sessions

	store, _ := sqlite.MustOpen(b, sqlite.Options{})
	for i := range sessions {
		if _, err := store.Append(ctx, fmt.Sprintf("s%03d", i), 0, []events.Event{created}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("s%03d", i)
			for seq := int64(1); seq <= int64(per); seq++ {
				if _, err := store.Append(ctx, id, seq, []events.Event{ev}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	appends := float64(total) / time.Since(start).Seconds()
	b.StopTimer()

	// The baselines: a fresh store's schema, written with plain SQL, 100 rows to a
	// commit (as asked of the store) and 50 (the most a group of 50 callers, each
	// waiting for its commit, can ever share).
	raw100, raw50 := rawInserts(b, ev, sessions, total, 100), rawInserts(b, ev, sessions, total, sessions)
	b.ReportMetric(appends, "appends/s")
	b.ReportMetric(raw100, "raw-100-a-commit/s")
	b.ReportMetric(raw50, "raw-50-a-commit/s")
	b.ReportMetric(appends/raw100, "appends/raw-100")
	b.ReportMetric(appends/raw50, "appends/raw-50")
}

// rawInserts writes total rows of ev, sessions interleaved, perCommit to a commit,
// with plain SQL into a fresh store's events table, and returns rows/s.
func rawInserts(b *testing.B, ev events.Event, sessions, total, perCommit int) float64 {
	ctx := context.Background()
	_, path := sqlite.MustOpen(b, sqlite.Options{})
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	at := time.Now().UTC().Format(time.RFC3339Nano)
	b.StartTimer()
	defer b.StopTimer()
	start := time.Now()
	seqs := make([]int64, sessions)
	for written := 0; written < total; {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO events (session_id, seq, turn_id, type, path, v, data, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for r := 0; r < perCommit && written < total; r, written = r+1, written+1 {
			s := written % sessions
			seqs[s]++
			if _, err := stmt.ExecContext(ctx, fmt.Sprintf("s%03d", s), seqs[s], ev.Turn, ev.Type, ev.Path, ev.V, string(ev.Data), at); err != nil {
				b.Fatal(err)
			}
		}
		stmt.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return float64(total) / time.Since(start).Seconds()
}
