package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// committed lists the committed turns in a database, from the log itself.
func committed(t *testing.T, db string) map[string]bool {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(`SELECT session_id || '/' || turn_id FROM events WHERE type = 'TurnCommitted'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		out[k] = true
	}
	return out
}

// TestBackupWhileServing: `turnlog backup` copies the database while a real turnlog
// serves 50 sessions taking turns. The copy passes PRAGMA integrity_check, holds
// every turn committed before the backup began, and a turnlog serves it.
func TestBackupWhileServing(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	cmd, base := b.serveChild(t)
	defer func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }()
	var sessions []string
	for i := 0; i < 50; i++ {
		sessions = append(sessions, regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(callServer(t, "POST", base+"/v1/sessions", `{"app":"crash"}`))[1])
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var turns atomic.Int64
	for _, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := http.Post(base+"/v1/sessions/"+s+"/turns", "application/json", strings.NewReader(`{"input":"hello"}`))
				if err != nil {
					continue // the server is being stopped at the test's end
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if strings.Contains(string(body), `"status":"completed"`) {
					turns.Add(1)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for deadline := time.Now().Add(60 * time.Second); turns.Load() < 100; { // under load
		if time.Now().After(deadline) {
			t.Fatalf("only %d turns ran", turns.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := committed(t, b.db)
	atStart := turns.Load()
	out := filepath.Join(t.TempDir(), "backup.db")
	var stdout, stderr bytes.Buffer
	if err := runWith(context.Background(), []string{"backup", "--db", b.db, out}, &stdout, &stderr, defaultWiring()); err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "passed PRAGMA integrity_check") {
		t.Fatalf("backup said: %s", stdout.String())
	}
	if turns.Load() == atStart {
		t.Fatal("no turn ran while the backup did: it was not made under load")
	}
	conn, err := sql.Open("sqlite", "file:"+out+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var verdict string
	conn.QueryRow(`PRAGMA integrity_check`).Scan(&verdict)
	conn.Close()
	if verdict != "ok" {
		t.Fatalf("the copy's integrity check: %s", verdict)
	}
	copied := committed(t, out)
	for turn := range before {
		if !copied[turn] {
			t.Fatalf("turn %s was committed before the backup began and is not in it (%d before, %d in the copy)", turn, len(before), len(copied))
		}
	}
	// A turnlog serves the copy: its sessions are there, and they take turns.
	served, copyBase := serveChildOn(t, out, b.cfg, t.TempDir())
	defer func() { served.Process.Signal(syscall.SIGKILL); served.Wait() }()
	if s := callServer(t, "GET", copyBase+"/v1/sessions/"+sessions[0], ""); !strings.Contains(s, sessions[0]) {
		t.Fatalf("the copy's session: %s", s)
	}
	if r := callServer(t, "POST", copyBase+"/v1/sessions/"+sessions[0]+"/turns", `{"input":"hello"}`); !strings.Contains(r, `"status":"completed"`) {
		t.Fatalf("a turn on the copy: %s", r)
	}
	// A backup never overwrites.
	if err := runWith(context.Background(), []string{"backup", "--db", b.db, out}, &stdout, &stderr, defaultWiring()); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a backup onto an existing file: %v", err)
	}
}
