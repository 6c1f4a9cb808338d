package systemtest

// The one harness of the process-level tests: TestMain and the modes a child of
// this test binary runs in, and the crash bundle — a real turnlog on a file, with
// counted and gated tools, killed and started again where a test says.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/turnlog/turnlog/cli"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

// The durability tests run the real CLI in a child process (this test binary, started
// with TURNLOG_CRASH_CHILD=1), kill it with SIGKILL at a chosen point of a turn, and
// restart it on the same database file. Tools and the model count their calls in
// files; "gate" files make a tool or a model call block, which is where the kill lands.
const childEnv = "TURNLOG_CRASH_CHILD"

func TestMain(m *testing.M) {
	if sandbox.IsHelper() { // the sandbox's helper, for commands the tests run
		sandbox.HelperMain()
	}
	if os.Getenv(smallDiskEnv) == "1" {
		setUpSmallDisk()
	}
	if os.Getenv(childEnv) == "1" {
		ctx := context.Background()
		if os.Getenv("CRASH_GRACEFUL") == "1" { // SIGTERM stops it as it stops turnlog (main)
			var stop context.CancelFunc
			ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
		}
		err := cli.RunWith(ctx, os.Args[1:], os.Stdout, os.Stderr, crashWiring(os.Getenv("CRASH_DIR")))
		if err != nil && err != cli.ErrSilentExit && !errors.As(err, new(cli.ExitStatus)) {
			fmt.Fprintln(os.Stderr, "turnlog:", err)
		}
		os.Exit(cli.ExitCode(err))
	}
	// The tests run from the repository's root, where the README, the examples, the
	// fixtures and the binary's main package are; children are started by absolute
	// path and inherit it.
	if exe, err := os.Executable(); err == nil {
		os.Args[0] = exe
	}
	if err := chdirToRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	removeBuiltBinary()
	sandbox.ReleaseCgroups()
	os.Exit(code)
}

// chdirToRoot makes the module's root (the directory of its go.mod) the working
// directory: this folder's parent, or the directory itself for a child a test
// started there.
func chdirToRoot() error {
	for _, dir := range []string{".", ".."} {
		if raw, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(raw), "module github.com/turnlog/turnlog\n") {
			return os.Chdir(dir)
		}
	}
	return errors.New("the system tests run in the systemtest folder of turnlog's repository")
}

// countAndGate appends a line to dir/name.count and blocks forever if dir/block-name exists.
func countAndGate(dir, name, line string) int {
	f, err := os.OpenFile(filepath.Join(dir, name+".count"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	fmt.Fprintln(f, line)
	f.Sync()
	f.Close()
	n := len(readLines(filepath.Join(dir, name+".count")))
	for _, gate := range []string{"block-" + name, fmt.Sprintf("block-%s-%d", name, n)} {
		if _, err := os.Stat(filepath.Join(dir, gate)); err == nil {
			select {} // held here until the parent kills the process
		}
	}
	return n
}

// holdWhile waits while the file at path exists, as a slow tool would, and stops when
// ctx ends (the turn is canceled).
func holdWhile(ctx context.Context, path string) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func readLines(path string) []string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(raw))
}

type noArgs struct{}

type countedModel struct {
	fsm.Model
	dir string
}

func (m countedModel) Call(ctx context.Context, r fsm.ModelRequest) (fsm.ModelResponse, error) {
	countAndGate(m.dir, "model", strconv.Itoa(len(r.Items)))
	return m.Model.Call(ctx, r)
}

func crashWiring(dir string) cli.Wiring {
	fns := demo.Functions()
	for _, name := range []string{"counted_write", "counted_read"} {
		fns[name] = functool.MustNew(name, "counts its calls", func(ctx context.Context, _ noArgs) (any, error) {
			n := countAndGate(dir, name, "run")
			if err := holdWhile(ctx, filepath.Join(dir, "hold-"+name)); err != nil {
				return nil, err
			}
			return map[string]int{"call": n}, nil
		})
	}
	return cli.Wiring{Functions: fns, WrapModel: func(_ string, m fsm.Model) fsm.Model { return countedModel{m, dir} }}
}

const crashConfig = `
apps:
  crash:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: counted_read}
            reply: "read done"
          - when: {input: "chain", after_tool: counted_write}
            tools: [{name: counted_read}]
          - when: {after_tool: counted_write}
            reply: "write done"
          - when: {input: "^(write|chain)"}
            tools: [{name: counted_write}]
          - when: {input: "^read"}
            tools: [{name: counted_read}]
          - reply: "hello"
    tools:
      counted_write: {idempotent: false}
      counted_read: {idempotent: true}
    agents:
      worker: {llm: script, tools: [counted_write, counted_read]}
`

type crashBundle struct {
	dir, db, cfg string
	session      *string // set by the first, committed turn; the crashed turn continues it
}

func setupCrash(t *testing.T) crashBundle {
	t.Helper()
	dir := t.TempDir()
	b := crashBundle{dir: dir, db: filepath.Join(dir, "turnlog.db"), cfg: filepath.Join(dir, "agent.yaml"), session: new(string)}
	if err := os.WriteFile(b.cfg, []byte(crashConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b crashBundle) child(args ...string) *exec.Cmd {
	full := []string{"run", "--app", "crash", "--config", b.cfg, "--db", b.db}
	if *b.session != "" {
		full = append(full, "--session", *b.session)
	}
	full = append(full, args...)
	cmd := exec.Command(os.Args[0], full...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "CRASH_DIR="+b.dir)
	return cmd
}

func (b crashBundle) gate(t *testing.T, name string, on bool) {
	t.Helper()
	path := filepath.Join(b.dir, "block-"+name)
	if on {
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func (b crashBundle) count(name string) []string {
	return readLines(filepath.Join(b.dir, name+".count"))
}

// eventTypes reads the log with plain SQL, as an operator would.
func (b crashBundle) eventTypes(t *testing.T) []string {
	t.Helper()
	out, _ := b.strings(t, `SELECT type || coalesce(nullif(':' || path, ':'), '') FROM events ORDER BY id`)
	return out // none while the child has not created the schema yet
}

// strings reads one column of text with plain SQL, as an operator would.
func (b crashBundle) strings(t *testing.T, query string) ([]string, error) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+b.db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out, rows.Err()
}

// crashAt starts a turn and SIGKILLs the child once cond holds.
func (b crashBundle) crashAt(t *testing.T, input string, cond func() bool) {
	t.Helper()
	cmd := b.child(input)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill point never reached; log: %v", b.eventTypes(t))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed by SIGKILL: %v", err)
	}
}

// restart runs the CLI again on the same file: it recovers the in-flight turn.
func (b crashBundle) restart(t *testing.T) string {
	t.Helper()
	out, err := b.child().CombinedOutput()
	if err != nil {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	return string(out)
}

func (b crashBundle) committedFirstTurn(t *testing.T) {
	t.Helper()
	out, err := b.child("hi").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello") {
		t.Fatalf("first turn: %v\n%s", err, out)
	}
	_, rest, _ := strings.Cut(string(out), "session ")
	*b.session, _, _ = strings.Cut(rest, "\n")
}

// after checks the database after the restart: the first turn is intact and the
// crashed turn ended as wanted.
func (b crashBundle) after(t *testing.T, wantStatus, wantCode string) []string {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, b.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	turns, err := store.RunningTurns(ctx)
	if err != nil || len(turns) != 0 {
		t.Fatalf("turns still running after restart: %v %v", turns, err)
	}
	db, _ := sql.Open("sqlite", "file:"+b.db+"?mode=ro")
	defer db.Close()
	var statuses []string
	rows, err := db.Query(`SELECT status || '/' || coalesce(error_code, '') FROM turns ORDER BY start_seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		rows.Scan(&s)
		statuses = append(statuses, s)
	}
	if want := []string{"completed/", wantStatus + "/" + wantCode}; strings.Join(statuses, ",") != strings.Join(want, ",") {
		t.Fatalf("turns = %v, want %v", statuses, want)
	}
	// The turns' counters (model and tool calls, tokens) are what the log says: a
	// rebuild, which counts them from the events alone, finds the same.
	counters := func() string {
		turns, err := store.Turns(ctx, *b.session)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tr := range turns {
			out = append(out, fmt.Sprintf("%s: %d model, %d tool, %d/%d tokens", tr.ID, tr.ModelCalls, tr.ToolCalls, tr.Usage.InputTokens, tr.Usage.OutputTokens))
		}
		return strings.Join(out, "; ")
	}
	recorded := counters()
	if _, err := store.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if rebuilt := counters(); recorded != rebuilt {
		t.Fatalf("turn counters after the restart: %s; counted from the log: %s", recorded, rebuilt)
	}
	var history []string
	hrows, _ := db.Query(`SELECT coalesce(content, name, output) FROM history ORDER BY seq, idx`)
	defer hrows.Close()
	for hrows.Next() {
		var s string
		hrows.Scan(&s)
		history = append(history, s)
	}
	if len(history) < 2 || history[0] != "hi" || history[1] != "hello" {
		t.Fatalf("the committed first turn is not intact: %v", history)
	}
	b.replaysAsRecorded(t)
	return history
}

// recoveries are the audit's rows of the crashed turn's recoveries, read with plain
// SQL: "attempt N: replayed …; resent […]; outcome unknown […]".
func (b crashBundle) recoveries(t *testing.T) []string {
	t.Helper()
	out, err := b.strings(t, `SELECT outcome || ': ' || reason FROM audit_recoveries ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// replaysAsRecorded exports the session and replays it: the recovery in its log is a
// fact the replay appends where it came, so the replay matches the recording.
func (b crashBundle) replaysAsRecorded(t *testing.T) {
	t.Helper()
	w := crashWiring(t.TempDir()) // counts nothing of the crashed run's
	var out, errOut bytes.Buffer
	if err := cli.RunWith(context.Background(), []string{"export", "--db", b.db, *b.session}, &out, &errOut, w); err != nil {
		t.Fatalf("export: %v\n%s", err, errOut.String())
	}
	fixture := t.TempDir()
	os.WriteFile(filepath.Join(fixture, "events.jsonl"), out.Bytes(), 0o644)
	cfg, err := os.ReadFile(b.cfg)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(fixture, "agent.yaml"), cfg, 0o644)
	out.Reset()
	if err := cli.RunWith(context.Background(), []string{"replay", fixture}, &out, &errOut, w); err != nil || !strings.Contains(out.String(), "replay ok") {
		t.Fatalf("replay of the recovered session: %v\n%s%s", err, out.String(), errOut.String())
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runCLI runs the turnlog command args in this process, with the binary's wiring.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}
