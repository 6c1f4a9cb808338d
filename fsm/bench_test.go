package fsm_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/fsm"
)

const (
	benchTurns        = storetest.BenchTurns
	benchStepsPerTurn = storetest.BenchStepsPerTurn
)

// benchAgent is storetest.StepAgent: a ReAct loop of 10 instant tool steps per turn
// on the scripted model.
func benchAgent(b *testing.B, idempotent bool) *fsm.Agent { return storetest.StepAgent(b, idempotent) }

// BenchmarkEngineStep runs 200 turns of 10 model+tool steps each on one session with
// durable commits (synchronous=FULL) and reports the per-step p50 at turns 1, 50 and
// 200, their ratio, storage per step, and the same machine's fsync floor (sampled
// between the turns). A
// non-idempotent tool costs two commits per step (ModelCalled+ToolScheduled, then
// ToolResulted); an idempotent one lets its result join the next step's commit.
func BenchmarkEngineStep(b *testing.B) {
	b.Run("non-idempotent", func(b *testing.B) { benchEngineStep(b, false, "FULL", 0) })
	b.Run("idempotent", func(b *testing.B) { benchEngineStep(b, true, "FULL", 0) })
	// Not durable: the engine's own CPU cost per step, without waiting on the disk.
	b.Run("cpu-only", func(b *testing.B) { benchEngineStep(b, false, "OFF", 0) })
	// The same with the context manager building every request within a 4k window:
	// counting, trimming and (every few turns) a compaction by the scripted model.
	b.Run("cpu-only-context-4k", func(b *testing.B) { benchEngineStep(b, false, "OFF", 4000) })
}

func benchEngineStep(b *testing.B, idempotent bool, synchronous string, window int) {
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		path := filepath.Join(dir, "bench.db")
		store, err := sqlite.Open(context.Background(), path, sqlite.Options{Synchronous: synchronous})
		if err != nil {
			b.Fatal(err)
		}
		agent := benchAgent(b, idempotent)
		if window > 0 {
			agent.Context = &contextmgr.Config{Window: window}
		}
		app := &fsm.App{Name: "bench", StartAgent: agent.Name, Agents: map[string]*fsm.Agent{agent.Name: agent}}
		e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("b")})
		if err != nil {
			b.Fatal(err)
		}
		probe := storetest.NewFsyncProbe(b, dir)
		perStep := storetest.StepTurns(b, e, func() { probe.Sample(3) }) // the floor, measured all through the run
		store.Close()
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		fsync := probe.Median()
		t1, t50, t200 := storetest.StepP50(perStep, 1), storetest.StepP50(perStep, 50), storetest.StepP50(perStep, 200)
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		b.ReportMetric(ms(t1), "step-p50-turn1-ms")
		b.ReportMetric(ms(t50), "step-p50-turn50-ms")
		b.ReportMetric(ms(t200), "step-p50-turn200-ms")
		b.ReportMetric(float64(t200)/float64(t1), "turn200/turn1")
		b.ReportMetric(ms(fsync), "fsync-ms")
		b.ReportMetric(float64(t200)/float64(fsync), "step/fsync")
		b.ReportMetric(float64(info.Size())/float64(benchTurns*benchStepsPerTurn), "db-bytes/step")
		b.Logf("history-length curve: per-step p50 turn 1 %.3f ms, turn 50 %.3f ms, turn 200 %.3f ms (fsync %.3f ms)",
			ms(t1), ms(t50), ms(t200), ms(fsync))
	}
}
