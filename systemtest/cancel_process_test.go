package systemtest

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// sleepers are the processes on this machine running `sleep <marker>`.
func sleepers(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(raw) == "sleep\x00"+marker+"\x00" {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestCancelStopsWhatIsRunning: a turn runs `sleep` in bash, a slow HTTP tool and a
// command tool that sleeps, at once; POST …/cancel with a reason stops all three —
// the sleeps' PID namespaces are empty and the HTTP request is cut — before any could
// have ended on its own, and the log holds each call as canceled, then TurnCanceled
// with the reason.
func TestCancelStopsWhatIsRunning(t *testing.T) {
	t.Parallel()
	const marker, napMarker = "31.5", "33.5" // sleep 31.5, sleep 33.5: command lines no other test runs
	httpEntered, httpCut := make(chan struct{}), make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // read whole, the server notices a client that goes away
		close(httpEntered)
		select {
		case <-r.Context().Done():
			close(httpCut)
		case <-time.After(time.Minute):
		}
	}))
	defer slow.Close()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`apps:
  ops:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: done
          - tools: [{name: bash, arguments: '{"command": "sleep %s"}'}, {name: slow, arguments: '{}'}, {name: nap, arguments: '{}'}]
    tools:
      slow: {url: "%s/slow", description: a slow endpoint, timeout: 1m}
      nap: {command: [sleep, "%s"], description: a slow program, timeout: 1m}
    agents:
      worker: {llm: script, tools: [bash, slow, nap]}
    policy:
      mode: workspace-write
      workspace: %s
      workspace_scope: shared
`, marker, slow.URL, napMarker, ws)), 0o644)
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{Config: cfg, DB: filepath.Join(dir, "t.db"), Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	handler, stop := tl.Handler(turnlog.ServeOptions{Dev: true})
	defer stop()
	api := httptest.NewServer(handler)
	defer api.Close()

	s, err := tl.Engine.CreateSession(ctx, "ops", "dev", nil)
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() {
		_, err := tl.Engine.RunTurn(ctx, s.ID, "go")
		finished <- err
	}()
	<-httpEntered
	deadline := time.Now().Add(30 * time.Second)
	for len(sleepers(marker)) == 0 || len(sleepers(napMarker)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the sleep never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	running, err := tl.Store.RunningTurns(ctx)
	if err != nil || len(running) != 1 {
		t.Fatalf("running turns: %v %v", running, err)
	}
	req, _ := http.NewRequest("POST", api.URL+"/v1/sessions/"+s.ID+"/turns/"+running[0].ID+"/cancel", bytes.NewReader([]byte(`{"reason": "deploy window closed"}`)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("cancel: %v %v", res, err)
	}
	res.Body.Close()
	// Cancel answered: the turn's end is recorded, so what it ran is stopped.
	for _, m := range []string{marker, napMarker} {
		if pids := sleepers(m); len(pids) != 0 {
			t.Fatalf("sleep %s still runs after the cancel: %v", m, pids)
		}
	}
	select { // the receiver hears of the closed connection on its own time
	case <-httpCut:
	case <-time.After(30 * time.Second):
		t.Fatal("the HTTP tool's request was not cut by the cancel")
	}
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	db, _ := sql.Open("sqlite", "file:"+filepath.Join(dir, "t.db")+"?mode=ro")
	defer db.Close()
	rows, err := db.Query(`SELECT type, coalesce(data ->> '$.tool', ''), coalesce(data ->> '$.error_kind', ''), coalesce(data ->> '$.reason', '') FROM events WHERE session_id = ? ORDER BY seq`, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var typ, tool, kind, reason string
		rows.Scan(&typ, &tool, &kind, &reason)
		switch typ {
		case events.TypeToolResulted:
			got = append(got, tool+":"+kind)
		case events.TypeTurnCanceled:
			got = append(got, "canceled:"+reason)
		}
	}
	if len(got) != 4 || got[3] != "canceled:deploy window closed" {
		t.Fatalf("log = %v", got)
	}
	results := append([]string{}, got[:3]...)
	sort.Strings(results)
	if strings.Join(results, ",") != "bash:canceled,nap:canceled,slow:canceled" {
		t.Fatalf("tool results = %v", results)
	}
	var audit string
	if err := db.QueryRow(`SELECT group_concat(outcome, ',') FROM audit WHERE session_id = ? AND tool IN ('bash', 'slow')`, s.ID).Scan(&audit); err != nil || !strings.Contains(audit, "canceled") {
		t.Fatalf("audit outcomes: %q %v", audit, err)
	}
}
