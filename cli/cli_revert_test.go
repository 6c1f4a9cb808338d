package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// TestRevertPutsATurnsFilesBack: `turnlog revert` undoes what a `turnlog run` turn's
// command did to its workspace, refuses a path changed since (printing it) until
// --force, and undoes its own revert with --revert.
func TestRevertPutsATurnsFilesBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o644)
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
          - tools: [{name: bash, arguments: '{"command": "echo two > notes.txt"}'}]
    agents:
      worker: {llm: script, tools: [bash]}
    policy:
      mode: workspace-write
      workspace: %s
      workspace_scope: shared
      rules:
        - {name: shell, tools: [bash], decision: allow}
`, ws)), 0o644)
	db := filepath.Join(dir, "t.db")
	_, stderr, err := runCLI(t, "run", "--config", cfg, "--db", db, "--app", "ops", "rewrite the notes")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	session := regexp.MustCompile(`session (\S+)`).FindStringSubmatch(stderr)[1]
	notes := func() string { raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); return string(raw) }
	if notes() != "two\n" {
		t.Fatalf("the turn left %q", notes())
	}
	turn := firstTurn(t, cfg, db, session)

	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("mine\n"), 0o644)
	_, stderr, err = runCLI(t, "revert", "--config", cfg, "--db", db, session, turn)
	if err == nil || !strings.Contains(stderr, "conflict: notes.txt: expected sha256:") || notes() != "mine\n" {
		t.Fatalf("a conflict: %v\n%s; notes %q", err, stderr, notes())
	}
	stdout, stderr, err := runCLI(t, "revert", "--config", cfg, "--db", db, "--force", session, turn)
	if err != nil || !strings.Contains(stdout, `"paths":["notes.txt"]`) || notes() != "one\n" {
		t.Fatalf("forced: %v\n%s%s; notes %q", err, stdout, stderr, notes())
	}
	id := regexp.MustCompile(`"revert_id":"([^"]+)"`).FindStringSubmatch(stdout)[1]
	if stdout, stderr, err = runCLI(t, "revert", "--config", cfg, "--db", db, "--revert", id, session); err != nil || notes() != "mine\n" {
		t.Fatalf("undo the revert: %v\n%s%s; notes %q", err, stdout, stderr, notes())
	}
	if _, _, err := runCLI(t, "revert", "--config", cfg, "--db", db, session); !events.IsCode(err, events.CodeInvalid) {
		t.Fatalf("nothing named: %v", err)
	}
}

// firstTurn is the id of session's first turn in db.
func firstTurn(t *testing.T, cfg, db, session string) string {
	t.Helper()
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: db, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	evs, err := tl.Store.Events(context.Background(), session, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type == events.TypeTurnStarted {
			return ev.Turn
		}
	}
	t.Fatal("no turn")
	return ""
}
