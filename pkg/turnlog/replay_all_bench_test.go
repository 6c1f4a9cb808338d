package turnlog_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/turnlog/turnlog/pkg/turnlog"
)

// BenchmarkReplayAll replays a log of 10,000 recorded sessions (a third of them
// another app's, one shop session in ten with a branch) against the config they ran
// under, on every processor, and reports sessions/s beside the same replay on one
// worker in the same run (a sequential in-process replay of the same sessions).
func BenchmarkReplayAll(b *testing.B) {
	b.StopTimer()
	db := filepath.Join(b.TempDir(), "recorded.db")
	recordSessionsB(b, db, 10000)
	opts := turnlog.Options{DB: db, ConfigData: []byte(replayConfig), Functions: lookupFunctions("Looks an order up.")}
	for i := 0; i < b.N; i++ {
		seq, err := turnlog.ReplayAll(context.Background(), opts, turnlog.ReplaySelection{Workers: 1})
		if err != nil || seq.Diverged != 0 {
			b.Fatalf("sequential: %+v %v", seq, err)
		}
		b.StartTimer()
		par, err := turnlog.ReplayAll(context.Background(), opts, turnlog.ReplaySelection{})
		b.StopTimer()
		if err != nil || par.Diverged != 0 || par.Sessions != seq.Sessions {
			b.Fatalf("parallel: %+v %v", par, err)
		}
		rate := func(r *turnlog.ReplayAllReport) float64 { return float64(r.Sessions) / r.Took.Seconds() }
		b.ReportMetric(rate(par), "sessions/s")
		b.ReportMetric(rate(seq), "sequential-sessions/s")
		b.ReportMetric(rate(par)/rate(seq), "parallel/sequential")
		b.Logf("%d sessions on %d processors: %.0f sessions/s, sequential %.0f sessions/s (%.2f×)",
			par.Sessions, runtime.GOMAXPROCS(0), rate(par), rate(seq), rate(par)/rate(seq))
	}
}
