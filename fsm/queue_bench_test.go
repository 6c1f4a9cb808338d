package fsm_test

import (
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// BenchmarkEnqueueStart: an input queued behind a running turn; the time from that
// turn's commit to the queued turn's start, from the log's own times, durable commits
// (target: at most 2 ms at p50).
func BenchmarkEnqueueStart(b *testing.B) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	store, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "q.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	agent := slowAgent(entered, release)
	e, err := fsm.New(store, []*fsm.App{{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": agent}}},
		fsm.Options{Clock: time.Now, NewID: counterIDs("b")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	var gaps []time.Duration
	for i := 0; i < b.N; i++ {
		s, _ := e.CreateSession(ctx, "test", "u", nil)
		if _, err := e.StartTurn(ctx, s.ID, "slow"); err != nil {
			b.Fatal(err)
		}
		<-entered
		if _, err := e.Enqueue(ctx, s.ID, "u", "next", false); err != nil {
			b.Fatal(err)
		}
		release <- struct{}{}
		for {
			turns, _ := store.Turns(ctx, s.ID)
			if len(turns) == 2 && turns[1].EndedAt != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		evs, _ := store.Events(ctx, s.ID, 0)
		var committed, started time.Time
		for _, ev := range evs {
			switch {
			case ev.Type == events.TypeTurnCommitted && committed.IsZero():
				committed = ev.At
			case ev.Type == events.TypeTurnStarted && !committed.IsZero() && started.IsZero():
				started = ev.At
			}
		}
		gaps = append(gaps, started.Sub(committed))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "commit-to-start-p50-ms")
}
