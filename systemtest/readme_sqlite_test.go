package systemtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSqliteTour runs the README's sqlite3 commands, as written, with the
// sqlite3 shell against a session the demo recorded: each works on the views, read-only.
func TestReadmeSqliteTour(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		if os.Getenv("TURNLOG_REQUIRE_SQLITE3") != "" {
			t.Fatal("the sqlite3 shell is not installed (.ci/run installs it)")
		}
		t.Skip("the sqlite3 shell is not installed")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Inspect a session with sqlite3")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("the sqlite3 section has no sh block")
	}
	dir := t.TempDir()
	_, errOut, err := runCLI(t, "run", "--db", filepath.Join(dir, "turnlog.db"), "where is order 42?")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(errOut, "session ")
	session, _, _ := strings.Cut(rest, "\n")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", m[1])
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SESSION="+session)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's sqlite3 commands: %v\n%s", err, out)
	}
	for _, want := range []string{"TurnCommitted", "lookup_order", "completed", "ok"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the tour shows no %q:\n%s", want, out)
		}
	}
}
