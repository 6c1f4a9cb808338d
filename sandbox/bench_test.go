package sandbox_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

// BenchmarkSandboxOverhead runs `true` through the sandbox (helper, PID and network
// namespaces, Landlock, limits, bash) and bare with exec.Command, in the same run, and
// reports both and their ratio.
func BenchmarkSandboxOverhead(b *testing.B) {
	ws := b.TempDir()
	bare := func() time.Duration {
		start := time.Now()
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	sandboxed := func() time.Duration {
		start := time.Now()
		res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws}, "true")
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
