package systemtest

import (
	"bytes"
	"context"
	"database/sql"
	"github.com/turnlog/turnlog/cli"
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

// sessionLoad is sessions taking turns against a served turnlog, one after another
// on each session, all sessions at once.
type sessionLoad struct {
	sessions []string
	turns    atomic.Int64 // turns completed
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
}

// loadSessions creates n sessions of the crash app on base and keeps each taking
// turns until stop.
func loadSessions(t *testing.T, base string, n int) *sessionLoad {
	t.Helper()
	l := &sessionLoad{done: make(chan struct{})}
	for i := 0; i < n; i++ {
		l.sessions = append(l.sessions, regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(callServer(t, "POST", base+"/v1/sessions", `{"app":"crash"}`))[1])
	}
	for _, s := range l.sessions {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.done:
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
					l.turns.Add(1)
				}
			}
		}()
	}
	return l
}

// until waits for n turns to have completed.
func (l *sessionLoad) until(t *testing.T, n int64) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); l.turns.Load() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d turns ran", l.turns.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the load and waits for its requests to return.
func (l *sessionLoad) stop() {
	l.once.Do(func() { close(l.done) })
	l.wg.Wait()
}

// copyServes checks a copy of a database: it passes PRAGMA integrity_check, and a
// turnlog serving it (with cfg) has session and runs a turn on it.
func copyServes(t *testing.T, db, cfg, session string) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var verdict string
	conn.QueryRow(`PRAGMA integrity_check`).Scan(&verdict)
	conn.Close()
	if verdict != "ok" {
		t.Fatalf("the copy's integrity check: %s", verdict)
	}
	served, base := serveChildOn(t, db, cfg, t.TempDir())
	defer func() { served.Process.Signal(syscall.SIGKILL); served.Wait() }()
	if s := callServer(t, "GET", base+"/v1/sessions/"+session, ""); !strings.Contains(s, session) {
		t.Fatalf("the copy's session: %s", s)
	}
	if r := callServer(t, "POST", base+"/v1/sessions/"+session+"/turns", `{"input":"hello"}`); !strings.Contains(r, `"status":"completed"`) {
		t.Fatalf("a turn on the copy: %s", r)
	}
}

// TestBackupWhileServing: `turnlog backup` copies the database while a real turnlog
// serves 50 sessions taking turns. The copy passes PRAGMA integrity_check, holds
// every turn committed before the backup began, and a turnlog serves it.
func TestBackupWhileServing(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	cmd, base := b.serveChild(t)
	defer func() { cmd.Process.Signal(syscall.SIGKILL); cmd.Wait() }()
	load := loadSessions(t, base, 50)
	defer load.stop()
	load.until(t, 100)
	before := committed(t, b.db)
	atStart := load.turns.Load()
	out := filepath.Join(t.TempDir(), "backup.db")
	var stdout, stderr bytes.Buffer
	if err := cli.RunWith(context.Background(), []string{"backup", "--db", b.db, out}, &stdout, &stderr, cli.DefaultWiring()); err != nil {
		t.Fatalf("backup: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "passed PRAGMA integrity_check") {
		t.Fatalf("backup said: %s", stdout.String())
	}
	if load.turns.Load() == atStart {
		t.Fatal("no turn ran while the backup did: it was not made under load")
	}
	copied := committed(t, out)
	for turn := range before {
		if !copied[turn] {
			t.Fatalf("turn %s was committed before the backup began and is not in it (%d before, %d in the copy)", turn, len(before), len(copied))
		}
	}
	copyServes(t, out, b.cfg, load.sessions[0])
	// A backup never overwrites.
	if err := cli.RunWith(context.Background(), []string{"backup", "--db", b.db, out}, &stdout, &stderr, cli.DefaultWiring()); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a backup onto an existing file: %v", err)
	}
}
