package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	for name := range commands() {
		_, stderr, err := runCLI(t, name, "--help")
		if err != nil || !strings.Contains(stderr, "usage: turnlog "+name) {
			t.Errorf("%s --help: err=%v\n%s", name, err, stderr)
		}
	}
	stdout, _, err := runCLI(t, "--help")
	if err != nil || !strings.Contains(stdout, "commands:") {
		t.Fatalf("--help: %v %s", err, stdout)
	}
	if _, _, err := runCLI(t, "teleport"); err == nil || !strings.Contains(err.Error(), "teleport") {
		t.Fatalf("unknown command: err = %v", err)
	}
	if _, _, err := runCLI(t); ExitCode(err) == 0 {
		t.Fatal("no command exits 0")
	}
}

func TestServeRefusesToStartWithoutKeys(t *testing.T) {
	t.Parallel()
	_, _, err := runCLI(t, "serve", "--db", filepath.Join(t.TempDir(), "x.db"))
	if !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "--dev") {
		t.Fatalf("serve without keys: err = %v", err)
	}
	_, _, err = runCLI(t, "serve", "--api-keys", "justakey", "--db", filepath.Join(t.TempDir(), "x.db"))
	if !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "KEY=USER") {
		t.Fatalf("serve with a malformed key: err = %v", err)
	}
}

func TestRunExportRebuildMigrate(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "turnlog.db")
	stdout, stderr, err := runCLI(t, "run", "--db", db, "where is order 42?")
	if err != nil || !strings.Contains(stdout, "Order 42 is shipped") {
		t.Fatalf("run: %v\n%s%s", err, stdout, stderr)
	}
	session := strings.TrimSpace(strings.TrimPrefix(strings.Split(stderr, "\n")[0], "session "))
	stdout, _, err = runCLI(t, "run", "--db", db, "--session", session, "and order 7?")
	if err != nil || !strings.Contains(stdout, "Order 7 is processing") {
		t.Fatalf("second turn: %v %s", err, stdout)
	}
	exported, _, err := runCLI(t, "export", "--db", db, session)
	if err != nil || strings.Count(exported, "\n") != 13 || !strings.Contains(exported, `"type":"TurnCommitted"`) {
		t.Fatalf("export: %v\n%s", err, exported)
	}
	if _, _, err := runCLI(t, "export", "--db", db, "nope"); !events.IsCode(err, events.CodeNotFound) {
		t.Fatalf("export of an unknown session: err = %v", err)
	}
	if out, _, err := runCLI(t, "rebuild", "--db", db); err != nil || !strings.Contains(out, "from 13 events") {
		t.Fatalf("rebuild: %v %s", err, out)
	}
	if out, _, err := runCLI(t, "migrate", "--db", db); err != nil || !strings.Contains(out, fmt.Sprintf("schema version %d", sqlite.SchemaVersion())) {
		t.Fatalf("migrate: %v %s", err, out)
	}
	if out, _, err := runCLI(t, "version"); err != nil || !strings.Contains(out, "turnlog") {
		t.Fatalf("version: %v %s", err, out)
	}
	// The exported session is a fixture: it replays.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(exported), 0o644)
	cfg, _ := os.ReadFile("examples/demo/agent.yaml")
	os.WriteFile(filepath.Join(dir, "agent.yaml"), cfg, 0o644)
	if out, _, err := runCLI(t, "replay", dir); err != nil || !strings.Contains(out, "2 turns") {
		t.Fatalf("replay of an export: %v %s", err, out)
	}
}

func TestRunReportsConfigErrorsWithLines(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(cfg, []byte("apps:\n  a:\n    start_agent: x\n    colour: red\n"), 0o644)
	_, _, err := runCLI(t, "run", "--config", cfg, "--db", filepath.Join(t.TempDir(), "x.db"), "hi")
	if err == nil || !strings.Contains(err.Error(), "agent.yaml:4: apps.a.colour: is not a known key here") {
		t.Fatalf("err = %v", err)
	}
}

func TestFailedTurnExitsNonZero(t *testing.T) {
	t.Parallel()
	_, stderr, err := runCLI(t, "run", "--config", "fixtures/max-turns/agent.yaml", "--db", filepath.Join(t.TempDir(), "x.db"), "loop")
	if ExitCode(err) == 0 || !strings.Contains(stderr, "max_turns_exceeded") {
		t.Fatalf("err = %v, stderr = %s", err, stderr)
	}
}

func TestServeRefusesTurnlogsOwnUserName(t *testing.T) {
	t.Parallel()
	_, _, err := runCLI(t, "serve", "--api-keys", "k=turnlog", "--db", filepath.Join(t.TempDir(), "x.db"))
	if !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "turnlog's own") {
		t.Fatalf("serve with user turnlog: %v", err)
	}
}

// TestAPIKeyRoles: KEY=USER:admin gives a key the admin role; any other role is
// refused by name.
func TestAPIKeyRoles(t *testing.T) {
	t.Parallel()
	keys, admins, err := parseKeys("k1=alice, k2=ops:admin")
	if err != nil || keys["k1"] != "alice" || keys["k2"] != "ops" || admins["k1"] || !admins["k2"] {
		t.Fatalf("keys %v, admins %v, %v", keys, admins, err)
	}
	for spec, want := range map[string]string{"k=alice:root": `unknown role "root"`, "k=:admin": "expected KEY=USER", "k=turnlog:admin": "turnlog's own"} {
		if _, _, err := parseKeys(spec); !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", spec, err, want)
		}
	}
}
