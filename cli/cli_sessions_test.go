package cli

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/client"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
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

// TestTheTerminalAnswersThroughAServer: with --server and --key, sessions, show and
// resume go through a running turnlog's API as the key's user.
func TestTheTerminalAnswersThroughAServer(t *testing.T) {
	t.Parallel()
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: filepath.Join(t.TempDir(), "turnlog.db"), ConfigData: demo.Config, Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	h, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k-alice": "alice"}})
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()
	cl := client.New(srv.URL, "k-alice", nil)
	s, err := cl.CreateSession(context.Background(), "demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cl.RunTurn(context.Background(), s.ID, client.TurnRequest{Input: "refund order 42"}); err != nil || res.Status != "suspended" {
		t.Fatalf("%+v %v", res, err)
	}
	remote := []string{"--server", srv.URL, "--key", "k-alice"}
	out, _, err := runCLI(t, append([]string{"sessions"}, remote...)...)
	if err != nil || !strings.Contains(out, s.ID) || !strings.Contains(out, "waiting") || !strings.Contains(out, "refund order 42") {
		t.Fatalf("sessions: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, append(append([]string{"show"}, remote...), s.ID)...)
	if ExitCode(err) != 5 || !strings.Contains(out, "approve issue_refund") {
		t.Fatalf("show: exit %d\n%s", ExitCode(err), out)
	}
	out, stderr, err := runCLI(t, append(append([]string{"resume"}, remote...), "--all", "yes", s.ID)...)
	if err != nil || !strings.Contains(out, "Refunded 58.40 EUR for order 42.") {
		t.Fatalf("resume: %v\n%s%s", err, out, stderr)
	}
	if _, _, err := runCLI(t, "show", "--server", srv.URL, "--key", "wrong", s.ID); err == nil {
		t.Fatal("a wrong key was let through")
	}
}

// TestResumeAsksOnTheTerminal: resume --ask asks each question without an answer,
// again after an answer it cannot take, and gives up, changing nothing, when the
// input ends.
func TestResumeAsksOnTheTerminal(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "turnlog.db")
	_, stderr, err := runCLI(t, "run", "--db", db, "refund order 42")
	if ExitCode(err) != 5 {
		t.Fatalf("run: exit %d\n%s", ExitCode(err), stderr)
	}
	session := strings.TrimSpace(strings.TrimPrefix(strings.Split(stderr, "\n")[0], "session "))
	resume := func(input string) (string, string, error) {
		var out, errOut strings.Builder
		w := Wiring{Functions: demo.Functions(), Stdin: strings.NewReader(input)}
		err := RunWith(context.Background(), []string{"resume", "--db", db, "--ask", session}, &out, &errOut, w)
		return out.String(), errOut.String(), err
	}
	if _, errOut, err := resume(""); ExitCode(err) != 2 || !strings.Contains(err.Error(), "the input ended") || !strings.Contains(errOut, "answer yes, no") {
		t.Fatalf("no input: exit %d %v\n%s", ExitCode(err), err, errOut)
	}
	out, errOut, err := resume("maybe\ny\n")
	if err != nil || !strings.Contains(out, "Refunded 58.40 EUR for order 42.") {
		t.Fatalf("resume --ask: %v\n%s%s", err, out, errOut)
	}
	if strings.Count(errOut, "answer yes, no, no:MESSAGE or session: ") != 2 || !strings.Contains(errOut, `not "maybe"`) {
		t.Errorf("the question was not asked again after an answer it cannot take:\n%s", errOut)
	}
}

// TestResumeOnPostgreSQLTakesTheSessionsLease: against a PostgreSQL database the
// terminal answers under the session's lease: while another node holds it, resume is
// refused and changes nothing; once it is free, resume answers and the turn ends.
func TestResumeOnPostgreSQLTakesTheSessionsLease(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	_, stderr, err := runCLI(t, "run", "--db", dsn, "refund order 42")
	if ExitCode(err) != 5 {
		t.Fatalf("run: exit %d\n%s", ExitCode(err), stderr)
	}
	session := strings.TrimSpace(strings.TrimPrefix(strings.Split(stderr, "\n")[0], "session "))
	pg := postgres.MustOpenOn(t, dsn)
	ctx := context.Background()
	token, err := pg.AcquireLease(ctx, session, "another-node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := pg.Events(ctx, session, 0)
	if _, _, err := runCLI(t, "resume", "--db", dsn, "--all", "yes", session); err == nil || !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("resume while another node holds the lease: %v", err)
	}
	if after, _ := pg.Events(ctx, session, 0); len(after) != len(before) {
		t.Fatalf("the refused resume appended %d events", len(after)-len(before))
	}
	if err := pg.ReleaseLease(ctx, session, token); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLI(t, "resume", "--db", dsn, "--all", "yes", session)
	if err != nil || !strings.Contains(out, "Refunded 58.40 EUR for order 42.") {
		t.Fatalf("resume: %v\n%s%s", err, out, stderr)
	}
}

// TestRecoveryLinesSayWhatEachTurnBecame: at start (run here; serve says the same) a
// turn a crash left running is recovered, and its line says what it became — here a
// turn that now waits for a person is "suspended", not "completed".
func TestRecoveryLinesSayWhatEachTurnBecame(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "turnlog.db")
	_, stderr, err := runCLI(t, "run", "--db", db, "where is order 7?")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	session := strings.TrimSpace(strings.TrimPrefix(strings.Split(stderr, "\n")[0], "session "))
	ctx := context.Background()
	store, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, _ := store.Events(ctx, session, 0)
	crashed := events.MustNew("t_crashed", "", &events.TurnStarted{Input: "refund order 42", Agent: "support"})
	crashed.Session = session
	if _, err := store.Append(ctx, session, evs[len(evs)-1].Seq, []events.Event{crashed}); err != nil {
		t.Fatal(err)
	}
	store.Close()
	_, stderr, err = runCLI(t, "run", "--db", db) // no input: recovery alone
	want := "recovered turn t_crashed of session " + session + ": suspended: 1 question(s) wait for a person"
	if err != nil || !strings.Contains(stderr, want) {
		t.Fatalf("recovery: %v\n%s\nwant %q", err, stderr, want)
	}
}
