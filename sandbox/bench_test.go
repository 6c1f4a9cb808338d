package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
	"golang.org/x/sys/unix"
)

// BenchmarkSandboxOverhead runs `bash -c true` through the production helper path —
// the helper program make build embeds in turnlog (sandbox/helper), as turnlog
// starts it — and bare, in the same run, and reports both, their ratio and what each
// step took (medians): turnlog's preparation (cgroups, staging directory, masks),
// the helper's start (its namespaces; the Go runtime and its package init, measured
// apart as init-ms), its setup (cgroups joined, root built, masks, confinement),
// the command, the apply and the settling — on an empty workspace and on one of
// 50,000 files (dependency folders included, which the masks walk). whole-binary is
// the same with turnlog's whole binary as the helper (a build without make build).
func BenchmarkSandboxOverhead(b *testing.B) {
	helper, whole := buildBinary(b, "github.com/turnlog/turnlog/sandbox/helper"), buildBinary(b, "github.com/turnlog/turnlog")
	b.Run("empty", func(b *testing.B) { sandboxOverhead(b, helper, b.TempDir()) })
	b.Run("empty-whole-binary", func(b *testing.B) { sandboxOverhead(b, whole, b.TempDir()) })
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
		sandboxOverhead(b, helper, ws)
	})
}

// buildBinary builds a program of this module for a benchmark, as make build does.
func buildBinary(b *testing.B, pkg string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// sandboxOverhead measures as the bash tool runs commands: one MaskCache per
// workspace, so a directory that did not change is not read again.
func sandboxOverhead(b *testing.B, bin, ws string) {
	spec := sandbox.WithHelper(sandbox.Spec{Workspace: ws, MaskCache: &sandbox.MaskCache{}}, bin)
	bare := func() time.Duration {
		start := time.Now()
		if err := exec.Command("bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	steps := map[string][]time.Duration{}
	var order []string
	sandboxed := func() time.Duration {
		start := time.Now()
		res, err := sandbox.Run(context.Background(), spec, "true")
		took := time.Since(start)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%+v %v", res, err)
		}
		for _, p := range res.Phases {
			if _, ok := steps[p.Name]; !ok {
				order = append(order, p.Name)
			}
			steps[p.Name] = append(steps[p.Name], p.Took)
		}
		return took
	}
	var tb, ts, ti []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tb = append(tb, bare())
		ts = append(ts, sandboxed())
		ti = append(ti, packageInit(b, bin))
	}
	b.StopTimer()
	mb, ms := median(tb), median(ts)
	b.ReportMetric(float64(mb)/1e6, "bare-ms")
	b.ReportMetric(float64(ms)/1e6, "sandboxed-ms")
	b.ReportMetric(float64(ms)/float64(mb), "sandboxed/bare")
	b.ReportMetric(float64(median(ti))/1e6, "init-ms")
	for i, name := range order {
		b.ReportMetric(float64(median(steps[name]))/1e6, fmt.Sprintf("step%02d-ms", i+1))
		if b.N > 1 {
			b.Logf("step%02d %7.3f ms  %s", i+1, float64(median(steps[name]))/1e6, name)
		}
	}
}

// packageInit is how long the binary's package initialization takes, by its own
// account (GODEBUG=inittrace=1).
func packageInit(b *testing.B, bin string) time.Duration {
	cmd := exec.Command(bin)
	// As the helper, with no spec: it stops as soon as its packages are initialized.
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "TURNLOG_SANDBOX_HELPER=1")
	out, _ := cmd.CombinedOutput()
	var total float64
	for _, line := range strings.Split(string(out), "\n") {
		// init PACKAGE @T ms, N ms clock, …
		f := strings.Fields(line)
		if len(f) > 6 && f[0] == "init" && f[6] == "clock," {
			var ms float64
			fmt.Sscan(f[4], &ms)
			total += ms
		}
	}
	return time.Duration(total * float64(time.Millisecond))
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// BenchmarkApply reports the apply's own duration — as the helper measures it:
// snapshots, plan, journal, every step and the one syncfs at the end — beside
// `cp -a` of the same tree from a tmpfs (the write layer is one) followed by one
// syncfs, in the same run, for 100,000 small files in 10,000 directories and for
// one 500 MB file, on the disk the tests' workspaces lie on.
func BenchmarkApply(b *testing.B) {
	for _, c := range []struct{ name, make string }{
		{"100k-small-files", `mkdir -p out/d{0..9999} && for d in {0..9999}; do for f in {0..9}; do echo "$d $f" > out/d$d/f$f; done; done`},
		{"500MB-file", `mkdir out && head -c 500000000 /dev/urandom > out/big`},
	} {
		b.Run(c.name, func(b *testing.B) {
			var applies, copies []time.Duration
			apply := func() {
				ws := b.TempDir()
				res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, Timeout: 10 * time.Minute, FileBytes: 1 << 30}, c.make)
				if err != nil || res.ExitCode != 0 || res.Changes == nil || res.Changes.Failed != "" {
					b.Fatalf("%+v %v", res, err)
				}
				applies = append(applies, res.ApplyDuration)
			}
			for i := 0; i < b.N; i++ {
				// In turns, which goes first: this disk's speed drifts within minutes.
				if i%2 == 0 {
					apply()
					copies = append(copies, copyTree(b, c.make))
				} else {
					copies = append(copies, copyTree(b, c.make))
					apply()
				}
			}
			ma, mc := median(applies), median(copies)
			b.ReportMetric(ma.Seconds(), "apply-s")
			b.ReportMetric(mc.Seconds(), "cp-a-s")
			b.ReportMetric(float64(ma)/float64(mc), "apply/cp-a")
		})
	}
}

// copyTree makes the tree make makes on a tmpfs, then times cp -a of it to the
// disk, with one syncfs after.
func copyTree(b *testing.B, make string) time.Duration {
	src := b.TempDir()
	if err := unix.Mount("tmpfs", src, "tmpfs", 0, "size=2g,nr_inodes=1m"); err != nil {
		b.Fatal(err)
	}
	defer unix.Unmount(src, unix.MNT_DETACH)
	if out, err := exec.Command("bash", "-c", "cd "+src+" && "+make).CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	dst := b.TempDir()
	start := time.Now()
	if out, err := exec.Command("cp", "-a", filepath.Join(src, "out"), dst).CombinedOutput(); err != nil {
		b.Fatalf("cp -a: %v %s", err, out)
	}
	if out, err := exec.Command("sync", "-f", dst).CombinedOutput(); err != nil {
		b.Fatalf("sync -f: %v %s", err, out)
	}
	return time.Since(start)
}
