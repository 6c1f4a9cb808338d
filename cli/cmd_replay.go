package cli

import (
	"context"
	"fmt"
	"path/filepath"

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

// replayFixture replays DIR/events.jsonl under DIR/agent.yaml (and DIR/tools.json)
// on an engine that acts on nothing, in a fresh temporary store.
func (c *cliContext) replayFixture(ctx context.Context, dir string) (*fsm.ReplayReport, error) {
	return turnlog.ReplayFixture(ctx, c.options(filepath.Join(dir, turnlog.FixtureConfig), commonFlags{}), dir)
}
