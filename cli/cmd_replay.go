package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

func cmdReplay(ctx context.Context, c *cliContext, args []string) error {
	fs := newFlagSet(c, "replay", nil, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireArgs(fs, 1, "one FIXTURE_DIR"); err != nil {
		return err
	}
	rep, err := c.replayFixture(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "replay ok: session %s, %d turns, %d events match the recording\n", rep.Session, rep.Turns, rep.Events)
	return err
}

// replayFixture replays fixtures/<name>/events.jsonl under its agent.yaml into a
// fresh temporary store.
func (c *cliContext) replayFixture(ctx context.Context, dir string) (*fsm.ReplayReport, error) {
	recorded, err := readFixture(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "turnlog-replay-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	opts := c.options(filepath.Join(dir, "agent.yaml"), commonFlags{db: filepath.Join(tmp, "replay.db"), synchronous: "OFF"})
	opts.IgnoreWebhooks = true // a replay tells nobody
	tl, err := turnlog.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer tl.Close()
	return tl.Engine.Replay(ctx, recorded)
}

// readFixture reads a fixture's events.jsonl.
func readFixture(path string) ([]events.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read fixture: %w", err)
	}
	defer f.Close()
	return events.ReadJSONL(f, path)
}
