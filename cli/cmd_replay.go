package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// ExitDiverged ends turnlog replay --db when a session diverges.
const ExitDiverged = ExitStatus(3)

// cmdReplay replays a fixture folder, or with --db every selected session of a log
// against a config (see replayLog).
func cmdReplay(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "replay", nil, false)
	fs.StringVar(&f.db, "db", "", "replay every selected session of this log (SQLite file or postgres:// URL; never written) instead of a fixture")
	fs.StringVar(&f.config, "config", envOr("TURNLOG_CONFIG", ""), "with --db: the agent.yaml to replay against (default: the offline demo)")
	since := fs.String("since", "", "with --db: only sessions created at or after this time (RFC 3339, or a duration back from now such as 168h)")
	app := fs.String("app", "", "with --db: only this app's sessions")
	sample := fs.Int("sample", 0, "with --db: at most this many sessions, spread evenly over the selected (0: all)")
	workers := fs.Int("workers", 0, "with --db: replays at once (0: one a processor)")
	tools := fs.String("tools", "", "with --db: MCP tools from this snapshot (the tools.json of turnlog export --fixture)")
	discover := fs.Bool("discover", false, "with --db: MCP tools from the config's servers, asked now (the only network the replay uses)")
	asJSON := fs.Bool("json", false, "with --db: print the report as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.db == "" {
		if err := requireArgs(fs, 1, "one FIXTURE_DIR (or --db)"); err != nil {
			return err
		}
		rep, err := c.replayFixture(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.stdout, "replay ok: session %s, %d turns, %d events match the recording\n", rep.Session, rep.Turns, rep.Events)
		return err
	}
	if err := requireArgs(fs, 0, "no FIXTURE_DIR with --db"); err != nil {
		return err
	}
	sel := turnlog.ReplaySelection{App: *app, Sample: *sample, Workers: *workers}
	if *since != "" {
		t, err := sinceTime(*since)
		if err != nil {
			return err
		}
		sel.Since = t
	}
	opts := c.options(f.config, f)
	switch {
	case *tools != "" && *discover:
		return events.FieldError(events.CodeInvalid, "discover", "goes without --tools: the snapshot comes from one or the other")
	case *tools != "":
		if _, err := os.Stat(*tools); err != nil {
			return events.FieldError(events.CodeInvalid, "tools", "%v", err)
		}
		snap, err := turnlog.ReadSnapshot(*tools)
		if err != nil {
			return err
		}
		opts.Snapshot = snap
	case *discover:
		snap, err := turnlog.DiscoverSnapshot(ctx, c.options(f.config, commonFlags{}))
		if err != nil {
			return err
		}
		opts.Snapshot = snap
	}
	rep, err := turnlog.ReplayAll(ctx, opts, sel)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printReplayReport(c, rep, f.config)
	}
	if rep.Diverged > 0 {
		return ExitDiverged
	}
	return nil
}

// printReplayReport prints what a replay of a log found, one cause a paragraph.
func printReplayReport(c *cliContext, rep *turnlog.ReplayAllReport, config string) {
	if config == "" {
		config = "the demo's config"
	}
	rate := float64(rep.Sessions) / max(rep.Took.Seconds(), 1e-9)
	fmt.Fprintf(c.stdout, "replayed %d sessions against %s in %s (%.0f sessions/s): %d diverge\n", rep.Sessions, config, rep.Took.Round(time.Millisecond), rate, rep.Diverged)
	for _, cause := range rep.Causes {
		fmt.Fprintf(c.stdout, "%6d  %s\n        e.g. session %s", cause.Sessions, cause.Cause, cause.Example.Session)
		if cause.Example.Path != "" {
			fmt.Fprintf(c.stdout, " at %s", cause.Example.Path)
		}
		fmt.Fprintf(c.stdout, ": %s\n", cause.Example.Message)
	}
}

// sinceTime reads --since: a time (RFC 3339) or a duration back from now.
func sinceTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, events.FieldError(events.CodeInvalid, "since", "is neither a time (RFC 3339, e.g. 2026-12-01T00:00:00Z) nor a duration back from now (e.g. 168h): %q", v)
	}
	return time.Now().Add(-d), nil
}

// replayFixture replays DIR/events.jsonl under DIR/agent.yaml (and DIR/tools.json)
// on an engine that acts on nothing, in a fresh temporary store.
func (c *cliContext) replayFixture(ctx context.Context, dir string) (*fsm.ReplayReport, error) {
	return turnlog.ReplayFixture(ctx, c.options(filepath.Join(dir, turnlog.FixtureConfig), commonFlags{}), dir)
}
