package systemtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// litestream finds the Litestream binary (.ci/run installs it with go install).
func litestream(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("litestream"); err == nil {
		return p
	}
	gobin, _ := exec.Command("go", "env", "GOPATH").Output()
	p := filepath.Join(string(bytes.TrimSpace(gobin)), "bin", "litestream")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("TURNLOG_REQUIRE_LITESTREAM") != "" {
		t.Fatal("litestream is needed: go install github.com/benbjohnson/litestream/cmd/litestream@v0.5.18")
	}
	t.Skip("litestream is missing: go install github.com/benbjohnson/litestream/cmd/litestream@v0.5.18")
	return ""
}

// TestLitestreamReplicaWhileServing: Litestream replicates a served turnlog to a
// local directory while 20 sessions take turns, with turnlog's own checkpoints left
// to Litestream (--wal-autocheckpoint 0). A restore of the replica passes PRAGMA
// integrity_check, holds every committed turn, and a turnlog serves it.
func TestLitestreamReplicaWhileServing(t *testing.T) {
	t.Parallel()
	bin := litestream(t)
	b := setupCrash(t)
	cmd, base := serveChildOn(t, b.db, b.cfg, b.dir, "--wal-autocheckpoint", "0")
	defer func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }()
	replica := filepath.Join(t.TempDir(), "replica")
	var replLog bytes.Buffer
	repl := exec.Command(bin, "replicate", b.db, "file://"+replica)
	repl.Stdout, repl.Stderr = &replLog, &replLog
	if err := repl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { repl.Process.Signal(syscall.SIGKILL); repl.Wait() }()

	load := loadSessions(t, base, 20)
	defer load.stop()
	load.until(t, 300)
	load.stop()
	want := committed(t, b.db)

	// Replication is asynchronous (a sync a second): restore until the replica
	// holds every turn committed, or give up.
	var got map[string]bool
	var out string
	for attempt := 0; ; attempt++ {
		out = filepath.Join(t.TempDir(), fmt.Sprintf("restored-%d.db", attempt))
		res, err := exec.Command(bin, "restore", "-o", out, "file://"+replica).CombinedOutput()
		if err == nil {
			got = committed(t, out)
			if missing(want, got) == 0 {
				break
			}
		}
		if attempt == 60 {
			t.Fatalf("after %d restores the replica lacks %d of %d committed turns (restore: %v %s)\nlitestream: %s",
				attempt, missing(want, got), len(want), err, res, replLog.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	copyServes(t, out, b.cfg, load.sessions[0])
}

// missing counts the turns of want that got lacks.
func missing(want, got map[string]bool) int {
	n := 0
	for k := range want {
		if !got[k] {
			n++
		}
	}
	return n
}
