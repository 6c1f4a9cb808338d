package sandbox_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

// runRestoreStandin restores what in.Restore holds in in.Spec.Workspace, pausing
// once it has done in.Share of its steps ("paused"), or, with "settle", once it
// finished, before it is settled ("restored"); it waits there to be killed.
func runRestoreStandin(in standin, report *os.File) int {
	raw, err := os.ReadFile(in.Restore)
	var rs []sandbox.Restore
	if err == nil {
		err = json.Unmarshal(raw, &rs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var at, of int
	if in.Share != "settle" {
		fmt.Sscanf(in.Share, "%d/%d", &at, &of)
		sandbox.SetRestoreAfterOp(func(done, all int) {
			if done == all*at/of {
				fmt.Fprintln(report, "paused")
				time.Sleep(time.Hour)
			}
		})
	}
	if _, _, err := sandbox.RestoreFiles(in.Spec.Workspace, "revert", rs, false); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Fprintln(report, "restored")
	time.Sleep(time.Hour)
	return 0
}

// TestAKilledRestoreLeavesTheWorkspaceBeforeOrAfter: turnlog killed with SIGKILL at
// ten points of a restore of about 1,500 paths (a command's edit of 500 files, its
// removal of 500 and its 500 new ones), from before its first step to after its
// last, leaves the workspace, once recovered, as the command left it or as the
// restore puts it; one that finished but whose revert was never recorded is taken
// back, one whose revert was is kept.
func TestAKilledRestoreLeavesTheWorkspaceBeforeOrAfter(t *testing.T) {
	if raceEnabled {
		t.Skip("make test runs this without the race detector, which only slows its processes down")
	}
	s, _ := spec(t)
	ws := s.Workspace
	for d := range 10 {
		os.MkdirAll(filepath.Join(ws, fmt.Sprintf("d%02d", d)), 0o755)
		for f := range 100 {
			os.WriteFile(filepath.Join(ws, fmt.Sprintf("d%02d/f%03d", d, f)), []byte(fmt.Sprintf("v1 %d %d\n", d, f)), 0o644)
		}
	}
	original := snapshot(t, ws)
	const command = `sed -i s/v1/v2/ d0[0-4]/* && rm -rf d0[5-9] && mkdir n && for f in $(seq 500); do echo $f > n/$f; done`
	plan := filepath.Join(t.TempDir(), "restore.json")
	var changed map[string]string
	// change runs the command and writes what restores the workspace to the plan.
	change := func() {
		t.Helper()
		rs := undoOf(t, s, command)
		raw, _ := json.Marshal(rs)
		if err := os.WriteFile(plan, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		changed = snapshot(t, ws)
	}
	change()
	// A step taken back leaves its directory's time as the take-back made it, as an
	// apply's rollback does: directories are compared but for their times.
	check := func(what string) {
		t.Helper()
		switch got := withoutDirTimes(snapshot(t, ws)); {
		case diffSnapshots(withoutDirTimes(changed), got) == "":
		case diffSnapshots(withoutDirTimes(original), got) == "":
			change() // restored: the next point starts from the command's changes again
		default:
			t.Fatalf("%s: the workspace is neither as the command left it nor as restored:\n%.1500s", what, diffSnapshots(changed, got))
		}
	}
	for j := range 10 {
		killRestoreAt(t, s, plan, fmt.Sprintf("%d/9", j))
		if _, err := sandbox.RecoverApplies(ws, nil); err != nil {
			t.Fatalf("recovering after turnlog was killed at %d/9: %v", j, err)
		}
		check(fmt.Sprintf("killed at %d/9", j))
	}
	for _, recorded := range []bool{false, true} {
		killRestoreAt(t, s, plan, "settle")
		if _, err := sandbox.RecoverApplies(ws, func(string) (bool, error) { return recorded, nil }); err != nil {
			t.Fatal(err)
		}
		want, name := changed, "as the command left it"
		if recorded {
			want, name = original, "restored"
		}
		if d := diffSnapshots(withoutDirTimes(want), withoutDirTimes(snapshot(t, ws))); d != "" {
			t.Fatalf("a finished restore whose revert was recorded=%v is not %s:\n%.1500s", recorded, name, d)
		}
		if _, err := os.Lstat(filepath.Join(ws, ".turnlog")); err == nil {
			t.Fatalf("recovery left .turnlog behind (recorded=%v)", recorded)
		}
	}
}

// withoutDirTimes is a snapshot with its directories' modification times left out.
func withoutDirTimes(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for p, desc := range m {
		if strings.HasPrefix(desc, "d") {
			desc = desc[:strings.LastIndex(desc, " ")]
		}
		out[p] = desc
	}
	return out
}

// killRestoreAt runs the restore of plan in a stand-in for turnlog and kills it
// once it has done share of its steps (or, settle, once it finished).
func killRestoreAt(t *testing.T, s sandbox.Spec, plan, share string) {
	t.Helper()
	cmd, br := startStandin(t, standin{Spec: s, Share: share, Restore: plan})
	line, err := br.ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil || !strings.Contains("paused\nrestored\n", line) {
		t.Fatalf("%s: the stand-in ended before it paused (%q)", share, line)
	}
}
