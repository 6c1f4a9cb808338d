package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/events"
)

// Version is set at build time with -ldflags "-X github.com/turnlog/turnlog/cli.Version=...".
var Version = "dev"

// ErrSilentExit ends a command with exit status 1 after it printed its own message.
var ErrSilentExit = errors.New("exit 1")

type command struct {
	summary string
	usage   string
	run     func(ctx context.Context, c *cliContext, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"serve": {"serve the REST API", "serve [--addr HOST:PORT] [--dev] [--config FILE] [--db FILE]", cmdServe},
		"run":   {"run one turn locally and print the answer", "run [--app NAME] [--session ID] [--workspace DIR] [--config FILE] [--db FILE] INPUT...", cmdRun},
		"eval": {"run an eval suite — standard tasks with checks on their answers, tools, files, guardrails, tokens and cost, and judged checks — and report each case's pass rate (exit 4 when one fails, needs a judge or did worse than --baseline)",
			"eval [--db FILE] [--as USER] [--runs N] [--parallel N] [--junit FILE] [--json FILE|-] [--baseline RUN|REPORT.json [--max-drop X] [--max-cost-rise X]] [--record FILE] [--replay FILE [--allow-judge]] [--workspaces DIR] SUITE.yaml", cmdEval},
		"replay": {"replay a recorded fixture and report the first divergence, or every session of a log against a config, grouped by what diverges",
			"replay FIXTURE_DIR  |  replay --db DB [--config FILE] [--since T] [--app A] [--sample N] [--workers N] [--tools FILE | --discover] [--json]", cmdReplay},
		"export": {"print a session's events as NDJSON, or write a fixture folder that replays anywhere (and replay it)",
			"export [--db FILE] SESSION_ID  |  export [--db FILE] [--config FILE] --fixture DIR SESSION_ID", cmdExport},
		"backup": {"write a consistent copy of the database, also while it is served", "backup [--db FILE] OUT", cmdBackup},
		"erase": {"erase sessions (with --cascade, their branches) or everything of one user, leaving a receipt",
			"erase [--db FILE] [--cascade] [--by NAME] SESSION_ID...  |  erase [--db FILE] --user USER", cmdErase},
		"revert": {"put a session's workspace files back as they were before a turn, every turn after one, or an earlier revert",
			"revert [--config FILE] [--db FILE] [--workspace DIR] [--force] [--by NAME] SESSION_ID TURN_ID  |  … --to-turn TURN_ID SESSION_ID  |  … --revert REVERT_ID SESSION_ID", cmdRevert},
		"rebuild": {"drop every projection and refold it from the events", "rebuild [--db FILE]", cmdRebuild},
		"migrate": {"apply pending schema migrations", "migrate [--db FILE]", cmdMigrate},
		"migrate-store": {"copy a SQLite file's sessions, memories, idempotency records, webhook deliveries and erasure receipts into an empty PostgreSQL database",
			"migrate-store --from FILE [--db postgres://…]", cmdMigrateStore},
		"sessions": {"list a user's sessions: id, app, status, committed turns, first input", "sessions [--user NAME] [--app NAME] [--db FILE | --server URL [--key KEY]]", cmdSessions},
		"show":     {"print a session's turns, its last answer and what waits for a person (exit 5 when something does)", "show [--db FILE | --server URL [--key KEY]] SESSION_ID", cmdShow},
		"resume": {"answer the questions a session's turn waits on and drive it on (exit 5 when it waits again)",
			"resume [--db FILE [--by NAME] | --server URL [--key KEY]] (--answer ID=yes|no|no:MESSAGE|session|approve|reject|stop|extend:FIELD=N,...)... [--all ANSWER] SESSION_ID", cmdResume},
		"config": {"print agent.yaml's JSON Schema or its reference, or check config files, every problem with its line",
			"config schema  |  config reference  |  config check FILE...", cmdConfig},
		"version": {"print the version", "version", cmdVersion},
		"doctor":  {"print which sandbox mechanisms work on this machine and what each app gets", "doctor [--config FILE]", cmdDoctor},
		"policy": {"check what an app's policy decides for a command or tool call",
			"policy check [--app NAME] [--agent NAME] [--workspace DIR] [--config FILE] [--json] -- 'COMMAND'  |  policy check --tool NAME --args JSON", cmdPolicy},
	}
}

// cliContext carries the output streams and the wiring to every command.
type cliContext struct {
	stdout, stderr io.Writer
	wiring         Wiring
	workspace      string         // overrides the apps' policy workspace (run --workspace)
	workspaceScope string         // whose each workspace under it is (eval: session; "": shared)
	closers        []func() error // what the command holds open: the apps' MCP servers
	neverDial      []string       // turnlog's own listeners, which no sandboxed command may reach
	protected      []string       // turnlog's own files, which no sandbox may see
	logger         zerolog.Logger // serve's log (the zero value logs nothing)
	asker          *bufio.Reader  // where resume --ask reads a person's answers (nil: it asks nothing)
}

// input is where the command reads a person's answers.
func (c *cliContext) input() io.Reader {
	if c.wiring.Stdin != nil {
		return c.wiring.Stdin
	}
	return os.Stdin
}

// stdinIsTerminal says the answers would come from a person at a terminal.
func stdinIsTerminal(c *cliContext) bool {
	f, ok := c.input().(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// RunWith runs the command args name with w plugged into its configs.
func RunWith(ctx context.Context, args []string, stdout, stderr io.Writer, w Wiring) error {
	c := &cliContext{stdout: stdout, stderr: stderr, wiring: w}
	defer func() {
		for _, close := range c.closers {
			close()
		}
	}()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return ErrSilentExit
		}
		return nil
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown command %q", args[0])
	}
	err := cmd.run(ctx, c, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "turnlog — durable LLM agents on an append-only SQLite event log")
	fmt.Fprintln(w, "\nusage: turnlog COMMAND [flags]\n\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'turnlog COMMAND --help' for a command's flags. Every flag has a TURNLOG_* environment twin.")
}

// commonFlags are the flags most commands share.
type commonFlags struct {
	config          string
	db              string
	synchronous     string
	checkpointPages int    // 0: the store's default; negative: none of turnlog's own
	otlpEndpoint    string // where spans go ("": nowhere)
	leaseTTL        time.Duration
	cacheSessions   int
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func newFlagSet(c *cliContext, name string, common *commonFlags, withConfig bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	cmd := commands()[name]
	fs.Usage = func() {
		fmt.Fprintf(c.stderr, "usage: turnlog %s\n\n%s\n", cmd.usage, cmd.summary)
		has := false
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprint(c.stderr, "\nflags:\n")
			fs.PrintDefaults()
		}
	}
	if common != nil {
		fs.StringVar(&common.db, "db", envOr("TURNLOG_DB", "turnlog.db"), "SQLite database file, or a postgres:// URL (env TURNLOG_DB)")
		fs.StringVar(&common.synchronous, "synchronous", envOr("TURNLOG_SYNCHRONOUS", "FULL"), "SQLite synchronous: FULL (durable), NORMAL or OFF (env TURNLOG_SYNCHRONOUS)")
		if withConfig {
			fs.StringVar(&common.config, "config", envOr("TURNLOG_CONFIG", ""), "agent.yaml with the apps (env TURNLOG_CONFIG; default: the offline demo)")
		}
	}
	return fs
}

// ExitCode maps an error to the process exit status.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.As(err, new(ExitStatus)):
		var st ExitStatus
		errors.As(err, &st)
		return int(st)
	case events.IsCode(err, events.CodeInvalid):
		return 2
	}
	return 1
}

func cmdVersion(_ context.Context, c *cliContext, args []string) error {
	fs := newFlagSet(c, "version", nil, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, err := fmt.Fprintf(c.stdout, "turnlog %s (schema %d)\n", Version, schemaVersion())
	return err
}

func requireArgs(fs *flag.FlagSet, n int, what string) error {
	if fs.NArg() != n {
		fs.Usage()
		return events.Errorf(events.CodeInvalid, "expected %s, got %q", what, strings.Join(fs.Args(), " "))
	}
	return nil
}
