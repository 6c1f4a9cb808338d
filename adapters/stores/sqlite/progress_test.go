package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
)

// progressClock is a clock the test moves.
type progressClock struct{ ns atomic.Int64 }

func (c *progressClock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *progressClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func modelCalled(turn string, n int) events.Event {
	return events.MustNew(turn, fmt.Sprintf("a/model/%d", n), &events.ModelCalled{Agent: "a", LLM: "m", RequestHash: "h",
		Response: events.ModelResponse{Text: "thinking"}, Usage: events.Usage{InputTokens: 10, OutputTokens: 2}})
}

// rowCounters reads a turn's counters with plain SQL from another connection, as an
// operator's sqlite3 would.
func rowCounters(t *testing.T, db *sql.DB, session, turn string) (models, tools, in int64) {
	t.Helper()
	if err := db.QueryRow(`SELECT model_calls, tool_calls, input_tokens FROM turns WHERE session_id = ? AND turn_id = ?`, session, turn).Scan(&models, &tools, &in); err != nil {
		t.Fatal(err)
	}
	return
}

// TestARunningTurnsCountersAreExactAndReachTheRow: while a turn runs, the store's
// reads of it count every model call committed so far; the row itself gets them
// once they are a second old (at the next commit), when the turn waits for people,
// and when it ends; a rebuild counts the same.
func TestARunningTurnsCountersAreExactAndReachTheRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &progressClock{}
	clock.advance(time.Hour)
	path := filepath.Join(t.TempDir(), "progress.db")
	s, err := Open(ctx, path, Options{Synchronous: "OFF", Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	seq := int64(0)
	appendOne := func(ev events.Event) {
		t.Helper()
		out, err := s.Append(ctx, "s1", seq, []events.Event{ev})
		if err != nil {
			t.Fatal(err)
		}
		seq = out[len(out)-1].Seq
	}
	appendOne(events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "a"}))
	appendOne(events.MustNew("t1", "", &events.TurnStarted{Input: "go", Agent: "a"}))
	for i := 1; i <= 3; i++ {
		appendOne(modelCalled("t1", i))
		if tr, err := s.Turn(ctx, "s1", "t1"); err != nil || tr.ModelCalls != i || tr.Usage.InputTokens != int64(10*i) {
			t.Fatalf("after %d model calls the store reads %+v (%v)", i, tr, err)
		}
	}
	if models, _, _ := rowCounters(t, raw, "s1", "t1"); models != 0 {
		t.Fatalf("the row has %d model calls within the first second, want them still in memory", models)
	}
	clock.advance(progressFlushAge)
	appendOne(modelCalled("t1", 4))
	if models, _, in := rowCounters(t, raw, "s1", "t1"); models != 4 || in != 40 {
		t.Fatalf("the row after a commit a second later: %d model calls, %d tokens; want all 4", models, in)
	}
	if tr, _ := s.Turn(ctx, "s1", "t1"); tr.ModelCalls != 4 {
		t.Fatalf("the store reads %d model calls, want 4", tr.ModelCalls)
	}
	appendOne(events.MustNew("t1", "", &events.TurnSuspended{Interrupts: []string{"i1"}}))
	if models, _, _ := rowCounters(t, raw, "s1", "t1"); models != 4 {
		t.Fatalf("a turn that waits for people has %d model calls in its row, want 4", models)
	}
	appendOne(events.MustNew("t1", "", &events.TurnResumed{By: "bob"}))
	appendOne(modelCalled("t1", 5))
	appendOne(events.MustNew("t1", "a/tool/c1", &events.ToolResulted{CallID: "c1", Tool: "noop", Output: `{}`}))
	if tr, _ := s.Turn(ctx, "s1", "t1"); tr.ModelCalls != 5 || tr.ToolCalls != 1 {
		t.Fatalf("the resumed turn reads %+v", tr)
	}
	if running, _ := s.RunningTurns(ctx); len(running) != 1 || running[0].ModelCalls != 5 || running[0].ToolCalls != 1 {
		t.Fatalf("running turns: %+v", running)
	}
	appendOne(events.MustNew("t1", "", &events.TurnCommitted{Agent: "a", Output: "done", Items: []events.Item{events.AssistantMessage("a", "done")}}))
	if models, tools, in := rowCounters(t, raw, "s1", "t1"); models != 5 || tools != 1 || in != 50 {
		t.Fatalf("the ended turn's row: %d model calls, %d tool calls, %d tokens", models, tools, in)
	}
	if _, err := s.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if tr, _ := s.Turn(ctx, "s1", "t1"); tr.ModelCalls != 5 || tr.ToolCalls != 1 || tr.Usage.InputTokens != 50 {
		t.Fatalf("after a rebuild: %+v", tr)
	}
}

// TestReadsNeverCountARunningTurnsCallsTwice: readers of a running turn, while its
// model calls commit and their counts move from memory to the row every few
// commits, always read a count between the calls committed before the read began
// and those begun before it ended.
func TestReadsNeverCountARunningTurnsCallsTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &progressClock{}
	s, err := Open(ctx, filepath.Join(t.TempDir(), "progress.db"), Options{Synchronous: "OFF", Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Append(ctx, "s1", 0, []events.Event{events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "a"}),
		events.MustNew("t1", "", &events.TurnStarted{Input: "go", Agent: "a"})})
	if err != nil {
		t.Fatal(err)
	}
	const calls = 400
	var begun, committed atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		seq := out[len(out)-1].Seq
		for i := 1; i <= calls; i++ {
			clock.advance(progressFlushAge / 3) // the counts reach the row every third commit
			begun.Add(1)
			got, err := s.Append(ctx, "s1", seq, []events.Event{modelCalled("t1", i)})
			if err != nil {
				t.Error(err)
				return
			}
			seq = got[0].Seq
			committed.Add(1)
		}
	}()
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for reads := 0; ; reads++ {
				low := committed.Load()
				tr, err := s.Turn(ctx, "s1", "t1")
				high := begun.Load()
				if err != nil {
					t.Error(err)
					return
				}
				if n := int64(tr.ModelCalls); n < low || n > high {
					t.Errorf("read %d model calls while %d were committed and %d begun", n, low, high)
					return
				}
				select {
				case <-done:
					return
				default:
				}
			}
		}()
	}
	wg.Wait()
	<-done
	if tr, _ := s.Turn(ctx, "s1", "t1"); tr.ModelCalls != calls {
		t.Fatalf("%d model calls read at the end, want %d", tr.ModelCalls, calls)
	}
}

// TestCountsLeftInADeadProcesssMemoryAreCountedAgain: a copy of the files taken
// while a turn's counts are only in memory is what a crash leaves; its row lacks
// them until HealTurnProgress counts them from the log. A store that closes writes
// them to the row.
func TestCountsLeftInADeadProcesssMemoryAreCountedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	stopped := func() time.Time { return time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC) } // nothing ages
	s, err := Open(ctx, path, Options{Synchronous: "FULL", Clock: stopped})
	if err != nil {
		t.Fatal(err)
	}
	evs := []events.Event{events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "a"}),
		events.MustNew("t1", "", &events.TurnStarted{Input: "go", Agent: "a"})}
	if _, err := s.Append(ctx, "s1", 0, evs); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if _, err := s.Append(ctx, "s1", int64(i+1), []events.Event{modelCalled("t1", i)}); err != nil {
			t.Fatal(err)
		}
	}
	crashed := filepath.Join(dir, "crashed.db")
	CopyAsACrashLeavesIt(t, path, crashed)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{path: 2, crashed: 0} {
		db, err := sql.Open("sqlite", "file:"+name+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		if models, _, _ := rowCounters(t, db, "s1", "t1"); models != want {
			t.Errorf("%s: the row has %d model calls, want %d", filepath.Base(name), models, want)
		}
		db.Close()
	}
	c, err := Open(ctx, crashed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.HealTurnProgress(ctx, "s1", "t1"); err != nil {
		t.Fatal(err)
	}
	if tr, err := c.Turn(ctx, "s1", "t1"); err != nil || tr.ModelCalls != 2 || tr.Usage.InputTokens != 20 {
		t.Fatalf("after the heal: %+v (%v)", tr, err)
	}
}
