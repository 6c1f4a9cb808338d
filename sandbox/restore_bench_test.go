package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

// BenchmarkRevertVsCopy: a revert of a command's edit of 1,000 files (each put back
// as it was, its old content written from memory, through the executor with its
// journal and one syncfs) beside cp -a of those 1,000 files to a fresh folder on the
// same disk with a sync after, in turns; reports revert/cp-a (the target is at most
// 3).
func BenchmarkRevertVsCopy(b *testing.B) {
	s := sandbox.Spec{Workspace: filepath.Join(b.TempDir(), "ws"), Timeout: 10 * time.Minute}
	os.MkdirAll(filepath.Join(s.Workspace, "src"), 0o755)
	line := make([]byte, 4096)
	for i := range line {
		line[i] = 'a' + byte(i%26)
	}
	for i := range 1000 {
		os.WriteFile(filepath.Join(s.Workspace, "src", fmt.Sprintf("f%04d.txt", i)), line, 0o644)
	}
	var reverts, copies []time.Duration
	revert := func() {
		rs := undoOfB(b, s, `sed -i '1s/^a/b/' src/*`)
		start := time.Now()
		res, conflicts, err := sandbox.RestoreFiles(s.Workspace, "revert", rs, false)
		if err != nil || len(conflicts) != 0 {
			b.Fatalf("%+v %v", conflicts, err)
		}
		if err := res.Settle(true); err != nil {
			b.Fatal(err)
		}
		reverts = append(reverts, time.Since(start))
	}
	cp := func() {
		dst := filepath.Join(b.TempDir(), "copy")
		start := time.Now()
		if out, err := exec.Command("cp", "-a", filepath.Join(s.Workspace, "src"), dst).CombinedOutput(); err != nil {
			b.Fatalf("cp -a: %v %s", err, out)
		}
		if out, err := exec.Command("sync", "-f", dst).CombinedOutput(); err != nil {
			b.Fatalf("sync -f: %v %s", err, out)
		}
		copies = append(copies, time.Since(start))
	}
	for i := 0; i < b.N; i++ {
		if i%2 == 0 { // in turns: the disk's speed drifts
			revert()
			cp()
		} else {
			cp()
			revert()
		}
	}
	mr, mc := median(reverts), median(copies)
	b.ReportMetric(mr.Seconds()*1000, "revert-ms")
	b.ReportMetric(mc.Seconds()*1000, "cp-a-ms")
	b.ReportMetric(float64(mr)/float64(mc), "revert/cp-a")
}

// undoOfB is undoOf for a benchmark.
func undoOfB(b *testing.B, s sandbox.Spec, command string) []sandbox.Restore {
	b.Helper()
	s.SettleLater = true
	res, err := sandbox.Run(b.Context(), s, command)
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("%+v %v", res, err)
	}
	rs := undoingTB(b, res)
	if err := res.Settle(true); err != nil {
		b.Fatal(err)
	}
	return rs
}
