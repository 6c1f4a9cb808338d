package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

// BenchmarkSandboxOverhead runs `true` through the sandbox (helper stages, PID and
// network namespaces, cgroups, the id-mapped overlay, masks, Landlock, seccomp,
// limits, bash, applying changes) and bare with exec.Command, in the same run, and
// reports both and their ratio — on an empty workspace and on one of 50,000 files
// (dependency folders included, which the masks walk).
func BenchmarkSandboxOverhead(b *testing.B) {
	b.Run("empty", func(b *testing.B) { sandboxOverhead(b, b.TempDir()) })
	b.Run("50k-files", func(b *testing.B) {
		ws := b.TempDir()
		for d := 0; d < 500; d++ {
			dir := filepath.Join(ws, "node_modules", fmt.Sprintf("pkg%03d", d), "lib")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := 0; f < 100; f++ {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.js", f)), []byte("module.exports = 1\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		os.WriteFile(filepath.Join(ws, "node_modules", "pkg007", ".env"), []byte("TOKEN=x"), 0o644)
		// Installed a while ago, as dependency folders are: the mask cache trusts a
		// directory unchanged once its ctime is two seconds old (a fresher change is
		// read again every time), so the tree is left to settle first.
		time.Sleep(2100 * time.Millisecond)
		sandboxOverhead(b, ws)
	})
}

// sandboxOverhead measures as the bash tool runs commands: one MaskCache per
// workspace, so a directory that did not change is not read again.
func sandboxOverhead(b *testing.B, ws string) {
	cache := &sandbox.MaskCache{}
	bare := func() time.Duration {
		start := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	sandboxed := func() time.Duration {
		start := time.Now()
		res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, MaskCache: cache}, "true")
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
		return time.Since(start)
	}
	var tb, ts []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tb = append(tb, bare())
		ts = append(ts, sandboxed())
	}
	b.StopTimer()
	mb, ms := median(tb), median(ts)
	b.ReportMetric(float64(mb)/1e6, "bare-ms")
	b.ReportMetric(float64(ms)/1e6, "sandboxed-ms")
	b.ReportMetric(float64(ms)/float64(mb), "sandboxed/bare")
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}
