package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

func cmdRun(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "run", &f, true)
	app := fs.String("app", envOr("TURNLOG_APP", "demo"), "app to run (env TURNLOG_APP)")
	session := fs.String("session", "", "continue this session instead of creating one")
	user := fs.String("user", envOr("TURNLOG_USER", "local"), "owner of a new session (env TURNLOG_USER)")
	fs.StringVar(&c.workspace, "workspace", envOr("TURNLOG_WORKSPACE", ""), "the directory the built-in tools work in; the turn runs as a local shell: its steps are printed as they happen and approvals are asked here (env TURNLOG_WORKSPACE)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	input := strings.Join(fs.Args(), " ")
	if c.workspace != "" && !flagGiven(fs, "db") && os.Getenv("TURNLOG_DB") == "" {
		// ./turnlog.db would lie in the workspace (cd proj && turnlog run --workspace .).
		db, err := stateDatabase()
		if err != nil {
			return err
		}
		f.db = db
		fmt.Fprintf(c.stderr, "database %s\n", db)
	}
	c.neverDial = append(c.neverDial, databaseAddrs(f.db)...) // no command reaches the database
	tl, err := c.open(ctx, f)
	if err != nil {
		return err
	}
	defer tl.Close()
	store, engine := tl.Store, tl.Engine
	if err := recoverTurns(ctx, c, engine); err != nil {
		return err
	}
	warnCommittedSecrets(ctx, tl, func(line string) { fmt.Fprintln(c.stderr, "turnlog: WARNING: "+line) })
	if strings.TrimSpace(input) == "" {
		return nil // nothing to run: recovery alone was asked for
	}
	if *session == "" {
		s, err := engine.CreateSession(ctx, *app, *user, nil)
		if err != nil {
			return err
		}
		*session = s.ID
	}
	fmt.Fprintf(c.stderr, "session %s\n", *session)
	if c.workspace != "" {
		return runInteractive(ctx, c, store, engine, *session, input)
	}
	res, err := engine.RunTurn(ctx, *session, input)
	if err != nil {
		return err
	}
	return report(c, res)
}

// flagGiven says whether the command line set the flag.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// stateDatabase is where `run --workspace` keeps its database unless told: the
// user's state directory ($XDG_STATE_HOME/turnlog, else ~/.local/state/turnlog),
// outside any workspace.
func stateDatabase() (string, error) {
	dir, err := turnlog.StateDir()
	if err != nil {
		return "", fmt.Errorf("%w (or set --db)", err)
	}
	return filepath.Join(dir, "turnlog.db"), nil
}

// report prints a turn's answer on stdout, or its error on stderr with exit status 1.
func report(c *cliContext, res *fsm.Result) error {
	if res.Status == fsm.StatusSuspended {
		for _, i := range res.Interrupts {
			if i.Kind == events.InterruptGuardrailReview {
				fmt.Fprintf(c.stderr, "turn %s is suspended: interrupt %s holds the response %s for review (rule %s); answer {\"decision\": \"approve\"} or {\"decision\": \"reject\"}\n", res.TurnID, i.ID, i.Arguments, i.Rule)
				continue
			}
			if i.Kind == events.InterruptBudget {
				fmt.Fprintf(c.stderr, "turn %s is suspended: interrupt %s holds a model call at a budget: %s %s; answer {\"extend\": {\"output_tokens\": N, …}} (resume --answer %s=extend:output_tokens=N) or {\"decision\": \"stop\"}\n", res.TurnID, i.ID, i.Reason, i.Arguments, i.ID)
				continue
			}
			fmt.Fprintf(c.stderr, "turn %s is suspended: interrupt %s waits for approval of %s %s; answer {\"confirmed\": true} or {\"confirmed\": false}\n", res.TurnID, i.ID, i.Tool, i.Arguments)
		}
		fmt.Fprintf(c.stderr, "answer them with turnlog resume %s (or one POST /v1/sessions/{id}/turns {\"resume_map\": {\"<interrupt id>\": <answer>, ...}} on turnlog serve)\n", res.Session)
		return ExitSuspended
	}
	if res.Status == fsm.StatusFailed {
		fmt.Fprintf(c.stderr, "turn %s failed: %s: %s\n", res.TurnID, res.Error.Code, res.Error.Message)
		return ErrSilentExit
	}
	if res.Status == fsm.StatusCanceled && res.Error != nil {
		fmt.Fprintf(c.stderr, "turn %s was canceled: %s\n", res.TurnID, res.Error.Message)
		return ErrSilentExit
	}
	_, err := fmt.Fprintln(c.stdout, res.Output)
	return err
}

// recoverTurns re-drives turns that a crash left in flight and says what became of them.
func recoverTurns(ctx context.Context, c *cliContext, e *fsm.Engine) error {
	results, err := e.Recover(ctx)
	if err != nil { // the turns that could not be recovered stay as they are; the others go on
		fmt.Fprintf(c.stderr, "turnlog: could not recover every turn: %v\n", err)
	}
	for _, r := range results {
		switch r.Status {
		case fsm.StatusFailed:
			fmt.Fprintf(c.stderr, "recovered turn %s of session %s: failed: %s: %s\n", r.TurnID, r.Session, r.Error.Code, r.Error.Message)
		case fsm.StatusSuspended:
			fmt.Fprintf(c.stderr, "recovered turn %s of session %s: suspended: %d question(s) wait for a person\n", r.TurnID, r.Session, len(r.Interrupts))
		case fsm.StatusCanceled:
			fmt.Fprintf(c.stderr, "recovered turn %s of session %s: canceled\n", r.TurnID, r.Session)
		default:
			fmt.Fprintf(c.stderr, "recovered turn %s of session %s: %s: %s\n", r.TurnID, r.Session, r.Status, r.Output)
		}
	}
	return nil
}
