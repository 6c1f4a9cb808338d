package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// withStore parses a store command's flags, checks its argument count, and runs fn on
// the opened store.
func withStore(ctx context.Context, c *cliContext, name string, args []string, nargs int, what string,
	fn func(logStore, *flag.FlagSet) error) error {
	var f commonFlags
	fs := newFlagSet(c, name, &f, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireArgs(fs, nargs, what); err != nil {
		return err
	}
	store, _, err := openStore(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(store, fs)
}

// cmdExport prints a session's recording as NDJSON, or with --fixture writes it as a
// fixture that replays anywhere (turnlog.WriteFixture) and replays it at once: exit
// status 1 when it does not replay as recorded.
func cmdExport(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "export", &f, true)
	fixture := fs.String("fixture", "", "write a fixture folder (events, the app's config without secrets, tool snapshot, skills) instead of NDJSON, and replay it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireArgs(fs, 1, "one SESSION_ID"); err != nil {
		return err
	}
	store, _, err := openStore(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	id := fs.Arg(0)
	if _, err := store.Session(ctx, id); err != nil {
		return err
	}
	evs, err := fsm.Recording(ctx, store, id)
	if err != nil {
		return err
	}
	if *fixture == "" {
		return events.WriteJSONL(c.stdout, evs)
	}
	opts := c.options(f.config, commonFlags{})
	opts.SecretsOptional = true // the fixture keeps none, and nothing is called
	rep, err := turnlog.WriteFixture(ctx, opts, evs, *fixture)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "wrote %s: %d events, %d tools in %s", *fixture, rep.Events, rep.Tools, turnlog.FixtureTools)
	if len(rep.Skills) > 0 {
		fmt.Fprintf(c.stdout, ", skills %s", strings.Join(rep.Skills, ", "))
	}
	fmt.Fprintln(c.stdout)
	for _, o := range rep.Outside {
		fmt.Fprintf(c.stdout, "not copied: skills %s lie outside the config's folder; a replay reads them there\n", o)
	}
	if rep.ReplayErr != nil {
		fmt.Fprintf(c.stdout, "the fixture does not replay as recorded — the config or turnlog changed since the recording (give --config the agent.yaml the session ran under): %v\n", rep.ReplayErr)
		return ExitStatus(1)
	}
	_, err = fmt.Fprintf(c.stdout, "replay ok: session %s, %d turns, %d events match the recording\n", rep.Replay.Session, rep.Replay.Turns, rep.Replay.Events)
	return err
}

func cmdRebuild(ctx context.Context, c *cliContext, args []string) error {
	return withStore(ctx, c, "rebuild", args, 0, "no arguments", func(store logStore, _ *flag.FlagSet) error {
		n, err := store.Rebuild(ctx)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "rebuilt projections from %d events\n", n)
		return err
	})
}

func cmdMigrate(ctx context.Context, c *cliContext, args []string) error {
	// Opening the store applies pending migrations.
	return withStore(ctx, c, "migrate", args, 0, "no arguments", func(store logStore, _ *flag.FlagSet) error {
		version := schemaVersion()
		if _, ok := store.(*postgres.Store); ok {
			version = postgres.SchemaVersion()
		}
		_, err := fmt.Fprintf(c.stdout, "database is at schema version %d\n", version)
		return err
	})
}

// cmdBackup copies the database while it may be served (sqlite.Backup): the copy is
// consistent, checked, and holds every turn committed before it began.
func cmdBackup(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "backup", &f, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireArgs(fs, 1, "one OUT file"); err != nil {
		return err
	}
	if turnlog.IsPostgres(f.db) {
		return events.FieldError(events.CodeInvalid, "db", "backup copies a SQLite file: back a PostgreSQL database up with its own tools (pg_dump, base backups)")
	}
	rep, err := sqlite.Backup(ctx, f.db, fs.Arg(0))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "backed up %d events of %d sessions to %s (%d bytes; it passed PRAGMA integrity_check)\n", rep.Events, rep.Sessions, fs.Arg(0), rep.Bytes)
	return err
}
