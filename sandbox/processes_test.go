package sandbox_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

// TestForkBombIsBounded runs a real fork bomb. Outside the sandbox the test counts
// the bomb's processes (those working in its workspace) while it runs: without the
// limit they climb into the thousands within the timeout; with it, never above the
// limit. The bomb's own "fork" errors show it hit the limit.
func TestForkBombIsBounded(t *testing.T) {
	s, _ := spec(t)
	s.MaxProcesses = sandbox.MinProcesses
	s.Timeout = 3 * time.Second
	hostPidMax, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	peak := make(chan int)
	go func() {
		most := 0
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				peak <- most
				return
			case <-tick.C:
				most = max(most, countIn(s.Workspace))
			}
		}
	}()
	res, err := sandbox.Run(context.Background(), s, `bomb() { bomb | bomb & }; bomb; sleep 30`)
	close(stop)
	most := <-peak
	if err != nil {
		t.Fatal(err)
	}
	if most > sandbox.MinProcesses {
		t.Fatalf("the fork bomb ran %d processes at once (limit %d)", most, sandbox.MinProcesses)
	}
	if most < sandbox.MinProcesses/4 {
		t.Fatalf("only %d of the bomb's processes were seen: the count does not see them", most)
	}
	if !strings.Contains(res.Stderr, "fork") {
		t.Fatalf("the bomb never hit the limit: %+v", res)
	}
	after, _ := os.ReadFile("/proc/sys/kernel/pid_max")
	if string(after) != string(hostPidMax) {
		t.Fatalf("the machine's pid_max changed: %s → %s", hostPidMax, after)
	}
	t.Logf("peak %d processes; stderr tail: %.200s", most, res.Stderr[max(0, len(res.Stderr)-200):])
}

// TestMissingProcessLimitFailsClosed: without a per-namespace process limit (as on
// a kernel before 6.14) the command does not run.
func TestMissingProcessLimitFailsClosed(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.Unavailable = "pid_max"
	res, err := sandbox.Run(context.Background(), s, "echo ran > ran.txt")
	if err == nil || !strings.Contains(err.Error(), "process limit") || res != nil {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if _, err := os.Stat(s.Workspace + "/ran.txt"); err == nil {
		t.Fatal("the command ran without its process limit")
	}
}

// countIn counts the processes whose working directory is dir.
func countIn(dir string) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if c := e.Name()[0]; c >= '0' && c <= '9' {
			if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && cwd == dir {
				n++
			}
		}
	}
	return n
}
