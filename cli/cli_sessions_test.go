package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTheTerminalAnswersASuspendedTurn: run exits 5 when its turn waits for a person
// and names the command that answers; sessions lists it as waiting; show prints the
// question (exit 5); resume refuses an answer that names no question, and while a
// serve holds the database; then answers and the turn ends.
func TestTheTerminalAnswersASuspendedTurn(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "turnlog.db")
	_, stderr, err := runCLI(t, "run", "--db", db, "refund order 42")
	if ExitCode(err) != 5 || !strings.Contains(stderr, "turnlog resume ") {
		t.Fatalf("run of a turn that waits: exit %d\n%s", ExitCode(err), stderr)
	}
	session := strings.TrimSpace(strings.TrimPrefix(strings.Split(stderr, "\n")[0], "session "))
	out, _, err := runCLI(t, "sessions", "--db", db)
	if err != nil || !strings.Contains(out, session) || !strings.Contains(out, "waiting") || !strings.Contains(out, "refund order 42") {
		t.Fatalf("sessions: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "show", "--db", db, session)
	id := regexp.MustCompile(`waiting: (int_[0-9a-f]+)  approve issue_refund`).FindStringSubmatch(out)
	if ExitCode(err) != 5 || id == nil {
		t.Fatalf("show: exit %d\n%s", ExitCode(err), out)
	}
	if _, _, err := runCLI(t, "resume", "--db", db, "--answer", "int_nope=yes", "--all", "yes", session); ExitCode(err) != 2 || !strings.Contains(err.Error(), "int_nope") {
		t.Fatalf("an answer to no question: %v", err)
	}
	release, held, err := lockServed(db) // as a serve of the file holds it
	if err != nil || !held {
		t.Fatal(held, err)
	}
	if _, _, err := runCLI(t, "resume", "--db", db, "--all", "yes", session); err == nil || !strings.Contains(err.Error(), "serve holds") {
		t.Fatalf("resume beside a serve: %v", err)
	}
	release()
	out, stderr, err = runCLI(t, "resume", "--db", db, "--answer", id[1]+"=yes", session)
	if err != nil || !strings.Contains(out, "Refunded 58.40 EUR for order 42.") {
		t.Fatalf("resume: %v\n%s%s", err, out, stderr)
	}
	if _, _, err := runCLI(t, "show", "--db", db, session); err != nil {
		t.Fatalf("show after: %v", err)
	}
}
