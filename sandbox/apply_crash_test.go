package sandbox_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
	"golang.org/x/sys/unix"
)

// A stand-in for turnlog: the test binary started again with standinEnv runs one
// command in the sandbox (the spec and the command in standinEnv, as JSON), with its
// apply paused as PauseApplies says, telling its test on descriptor 3 the helper's
// process id, and "paused" when the apply stopped — or, with a share of "settle",
// "applied" once Run returned with the apply kept for Settle. The test kills it there.
const standinEnv = "TURNLOG_TEST_STANDIN"

type standin struct {
	Spec    sandbox.Spec `json:"spec"`
	Command string       `json:"command"`
	Share   string       `json:"share"`
	// Restore, when set, is a file of what to restore (JSON) in Spec.Workspace,
	// instead of a command to run.
	Restore string `json:"restore,omitempty"`
}

func runStandin(raw string) int {
	var in standin
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	report := os.NewFile(3, "report")
	if in.Restore != "" {
		return runRestoreStandin(in, report)
	}
	started := func(pid int) { fmt.Fprintf(report, "helper %d\n", pid) }
	spec := sandbox.WithStarted(in.Spec, started)
	if in.Share == "settle" {
		spec.SettleLater = true
	} else {
		spec = sandbox.WithPause(spec, report, in.Share)
	}
	res, err := sandbox.Run(context.Background(), spec, in.Command)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintf(report, "applied %d\n", res.Changes.Count)
	time.Sleep(time.Hour) // killed here, before Settle
	return 0
}

// tmpfsSpec is spec with the workspace on a tmpfs of the test's own. The apply's
// logic is the same on every file system; this machine's disk takes about a
// millisecond for each file it creates, which would make every 100,000-file case
// minutes long (the disk's own path is taken by every other test).
func tmpfsSpec(t *testing.T) sandbox.Spec { return tmpfsSpecOf(t, "size=3g,nr_inodes=2m") }

// tmpfsSpecOf is tmpfsSpec with the tmpfs's options.
func tmpfsSpecOf(t *testing.T, opts string) sandbox.Spec {
	t.Helper()
	s, _ := spec(t)
	dir := filepath.Dir(s.Workspace)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts+",mode=0755"); err != nil {
		t.Skipf("no tmpfs of the test's own: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	os.MkdirAll(s.Workspace, 0o755)
	s.Timeout = 0
	return s
}

// fiftyThousand fills dir with d000…d049, each of 1,000 files.
func fiftyThousand(t *testing.T, dir string) {
	t.Helper()
	for d := range 50 {
		sub := filepath.Join(dir, fmt.Sprintf("d%03d", d))
		os.MkdirAll(sub, 0o755)
		for f := range 1000 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), []byte(fmt.Sprintf("v1 %d %d\n", d, f)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// mutation rewrites the 25,000 files of d000…d024, removes d025…d049 (25,000
// more), makes 50,000 files in 50 new directories, a symlink and a mode change:
// 100,000 paths and more. Its files are hard links of one (each name lands as a
// file of its own), which the command makes in no time: the apply is what takes it.
const mutation = `python3 -c '
import os, shutil
with open("seed", "w") as fh: fh.write("v2\n")
for d in range(25):
    for f in range(1000):
        p = "d%03d/f%03d" % (d, f)
        os.unlink(p)
        os.link("seed", p)
for d in range(25, 50): shutil.rmtree("d%03d" % d)
for d in range(50):
    os.mkdir("n%03d" % d)
    for f in range(1000): os.link("seed", "n%03d/f%03d" % (d, f))
os.symlink("d000/f000", "link")
os.chmod("d024", 0o700)
'`

// TestAKilledApplyLeavesTheWorkspaceBeforeOrAfter: the helper, or turnlog, killed
// with SIGKILL at ten points of a 100,000-path apply (from before its first step to
// after its last) leaves the workspace, once turnlog (the same process, or its next
// start) recovered, byte for byte as it was before the command or as the command
// left it — and an apply that finished but whose result was never recorded is taken
// back, one whose result was is kept.
func TestAKilledApplyLeavesTheWorkspaceBeforeOrAfter(t *testing.T) {
	if raceEnabled {
		t.Skip("make test runs this without the race detector, which only slows its processes down (minutes)")
	}
	ref := tmpfsSpec(t)
	fiftyThousand(t, ref.Workspace)
	before := digest(t, ref.Workspace)
	if res := run(t, ref, mutation); res.ExitCode != 0 || res.Changes == nil || res.Changes.Count < 100_000 {
		t.Fatalf("the whole apply: %+v %+v", res, res.Changes)
	}
	after := digest(t, ref.Workspace)

	// Ten points from before the first step to after the last; under bubblewrap,
	// whose confinement of the command is all that differs, the first, a middle and
	// the last.
	points := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	if ref.Mechanism == sandbox.MechanismBubblewrap {
		points = []int{0, 4, 9}
	}
	for _, killed := range []string{"helper", "turnlog"} {
		t.Run(killed+" killed", func(t *testing.T) {
			t.Parallel()
			s := tmpfsSpec(t)
			s.MaskCache = &sandbox.MaskCache{}
			fiftyThousand(t, s.Workspace)
			reset := func() {
				os.RemoveAll(s.Workspace)
				os.MkdirAll(s.Workspace, 0o755)
				fiftyThousand(t, s.Workspace)
			}
			check := func(what string) {
				t.Helper()
				switch got := digest(t, s.Workspace); got {
				case before:
				case after:
					reset()
				default:
					t.Fatalf("%s: the workspace is neither as before nor as after", what)
				}
			}
			for _, j := range points {
				share := fmt.Sprintf("%d/9", j)
				if killed == "helper" {
					killHelperAt(t, s, share)
				} else {
					killTurnlogAt(t, s, share, false)
					if _, err := sandbox.RecoverApplies(s.Workspace, nil); err != nil {
						t.Fatalf("recovering after turnlog was killed at %s: %v", share, err)
					}
				}
				check(killed + " killed at " + share)
			}
			if killed == "helper" {
				return
			}
			// Finished, not yet settled: the next start asks the log.
			for _, recorded := range []bool{false, true} {
				killTurnlogAt(t, s, "settle", true)
				if _, err := sandbox.RecoverApplies(s.Workspace, func(string) (bool, error) { return recorded, nil }); err != nil {
					t.Fatal(err)
				}
				want, name := before, "before"
				if recorded {
					want, name = after, "after"
				}
				if got := digest(t, s.Workspace); got != want {
					t.Fatalf("a finished apply whose result was recorded=%v was not left as %s", recorded, name)
				}
				if _, err := os.Lstat(filepath.Join(s.Workspace, ".turnlog")); err == nil {
					t.Fatalf("recovery left .turnlog behind (recorded=%v)", recorded)
				}
			}
		})
	}
}

// killHelperAt runs the mutation with the helper killed once its apply has done
// share of its steps: Run itself takes back what it applied.
func killHelperAt(t *testing.T, s sandbox.Spec, share string) {
	t.Helper()
	r, w, _ := os.Pipe()
	defer r.Close()
	pids := make(chan int, 1)
	s = sandbox.WithStarted(sandbox.WithPause(s, w, share), func(pid int) { pids <- pid })
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		if line == "paused\n" {
			syscall.Kill(<-pids, syscall.SIGKILL)
		}
	}()
	res, err := sandbox.Run(context.Background(), s, mutation)
	w.Close()
	if err != nil {
		t.Fatalf("%s: %v", share, err)
	}
	if res.Changes == nil || !strings.Contains(res.Changes.Failed, "helper ended") {
		t.Fatalf("%s: a helper killed mid-apply is not reported: %+v", share, res.Changes)
	}
}

// killTurnlogAt runs the mutation in a stand-in for turnlog and kills it — the
// helper dies with it — once the apply has done share of its steps (or, settle,
// once the apply finished and Run returned), then waits until the helper is gone.
func killTurnlogAt(t *testing.T, s sandbox.Spec, share string, settle bool) {
	t.Helper()
	if settle {
		share = "settle"
	}
	cmd, br := startStandin(t, standin{Spec: s, Command: mutation, Share: share})
	helper := 0
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s: the stand-in ended before its apply paused", share)
		}
		if pid, ok := strings.CutPrefix(strings.TrimSpace(line), "helper "); ok {
			helper, _ = strconv.Atoi(pid)
			continue
		}
		if line == "paused\n" || strings.HasPrefix(line, "applied ") {
			break
		}
	}
	pidfd, err := unix.PidfdOpen(helper, 0)
	cmd.Process.Kill()
	cmd.Wait()
	if err == nil { // the helper dies with it (its parent-death signal): wait until it has
		unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 30_000)
		unix.Close(pidfd)
	}
}

// startStandin starts the test binary as a stand-in for turnlog doing what in says,
// and returns it with what it tells its test on descriptor 3 (closed with the test).
func startStandin(t *testing.T, in standin) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	raw, _ := json.Marshal(in)
	r, w, _ := os.Pipe()
	t.Cleanup(func() { r.Close() })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), standinEnv+"="+string(raw))
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return cmd, bufio.NewReader(r)
}
