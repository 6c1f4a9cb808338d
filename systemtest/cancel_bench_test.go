package systemtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/pkg/turnlog"
)

// BenchmarkCancelLatency: a turn runs `sleep` in bash; the time from Cancel to the
// canceled turn recorded — the PID namespace killed, the call recorded as canceled,
// TurnCanceled appended (target: at most 1 s).
func BenchmarkCancelLatency(b *testing.B) {
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	cfg := filepath.Join(dir, "agent.yaml")
	const marker = "32.5"
	os.WriteFile(cfg, []byte(fmt.Sprintf(`apps:
  ops:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: done
          - tools: [{name: bash, arguments: '{"command": "sleep %s"}'}]
    agents:
      worker: {llm: script, tools: [bash]}
    policy: {mode: workspace-write, workspace: %s, workspace_scope: shared}
`, marker, ws)), 0o644)
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{Config: cfg, DB: filepath.Join(dir, "t.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer tl.Close()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s, err := tl.Engine.CreateSession(ctx, "ops", "u", nil)
		if err != nil {
			b.Fatal(err)
		}
		finished := make(chan error, 1)
		go func() { _, err := tl.Engine.RunTurn(ctx, s.ID, "go"); finished <- err }()
		for len(sleepers(marker)) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		running, err := tl.Store.RunningTurns(ctx)
		if err != nil || len(running) != 1 {
			b.Fatalf("running: %v %v", running, err)
		}
		b.StartTimer()
		start := time.Now()
		if _, err := tl.Engine.Cancel(ctx, s.ID, running[0].ID, "benchmark"); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		if err := <-finished; err != nil {
			b.Fatal(err)
		}
		if len(sleepers(marker)) != 0 {
			b.Fatal("the sleep outlived the cancel")
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/cancel")
}
