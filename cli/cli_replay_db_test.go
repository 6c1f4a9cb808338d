package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/examples/demo"
)

// TestReplayADatabaseAgainstAConfig: turnlog replay --db replays a log's sessions
// against a config: the demo's own reports none and exits 0; one whose support agent
// is instructed otherwise reports every session under that cause, as text and as
// JSON, and exits 3; a --since after them selects none.
func TestReplayADatabaseAgainstAConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "turnlog.db")
	for _, input := range []string{"where is order 42?", "hello", "where is order 7?"} {
		if _, stderr, err := runCLI(t, "run", "--db", db, "--synchronous", "OFF", input); err != nil {
			t.Fatalf("run %q: %v %s", input, err, stderr)
		}
	}
	out, _, err := runCLI(t, "replay", "--db", db)
	if err != nil || !strings.Contains(out, "replayed 3 sessions against the demo's config") || !strings.Contains(out, ": 0 diverge") {
		t.Fatalf("against the demo: %v\n%s", err, out)
	}
	changed := strings.Replace(string(demo.Config), "instructions: You help customers", "instructions: Be brief. You help customers", 1)
	if changed == string(demo.Config) {
		t.Fatal("the demo's support instructions moved: update this test")
	}
	cfg := filepath.Join(dir, "new.yaml")
	if err := os.WriteFile(cfg, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = runCLI(t, "replay", "--db", db, "--config", cfg)
	if ExitCode(err) != 3 || !strings.Contains(out, "3 diverge") || !strings.Contains(out, "     3  agent support: its instructions changed (at support/model/*)") {
		t.Fatalf("against a changed config: exit %d\n%s", ExitCode(err), out)
	}
	out, _, err = runCLI(t, "replay", "--db", db, "--config", cfg, "--json")
	var rep struct {
		Sessions, Diverged int
		Causes             []struct {
			Cause    string
			Sessions int
			Example  struct{ SessionID, Path string } `json:"example"`
		}
	}
	if ExitCode(err) != 3 || json.Unmarshal([]byte(out), &rep) != nil || rep.Diverged != 3 || len(rep.Causes) != 1 || rep.Causes[0].Sessions != 3 {
		t.Fatalf("as JSON: exit %d\n%s", ExitCode(err), out)
	}
	if out, _, err := runCLI(t, "replay", "--db", db, "--config", cfg, "--since", "2999-01-01T00:00:00Z"); err != nil || !strings.Contains(out, "replayed 0 sessions") {
		t.Fatalf("--since after every session: %v\n%s", err, out)
	}
	if _, _, err := runCLI(t, "replay", "--db", db, "--since", "yesterday"); err == nil || !strings.Contains(err.Error(), "since") {
		t.Fatalf("a --since that is no time: %v", err)
	}
}
