package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// cmdRevert puts a session's workspace files back as they were before a turn (or
// every turn after one, or before an earlier revert), as the REST API's revert
// routes do, and prints the revert recorded. A path changed since is a conflict,
// printed one a line, and nothing changes unless --force.
func cmdRevert(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "revert", &f, true)
	toTurn := fs.String("to-turn", "", "undo every turn after this one instead")
	revert := fs.String("revert", "", "undo this revert instead")
	force := fs.Bool("force", false, "overwrite paths changed since")
	by := fs.String("by", defaultEraser(), "who asks, for the record")
	fs.StringVar(&c.workspace, "workspace", envOr("TURNLOG_WORKSPACE", ""), "the directory `turnlog run --workspace` worked in (env TURNLOG_WORKSPACE)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	named := 0
	for _, given := range []bool{fs.NArg() == 2, *toTurn != "", *revert != ""} {
		if given {
			named++
		}
	}
	if fs.NArg() < 1 || fs.NArg() > 2 || named != 1 {
		fs.Usage()
		return events.Errorf(events.CodeInvalid, "expected SESSION_ID and one of TURN_ID, --to-turn TURN_ID or --revert REVERT_ID, got %q", strings.Join(args, " "))
	}
	if c.workspace != "" && !flagGiven(fs, "db") && os.Getenv("TURNLOG_DB") == "" {
		db, err := stateDatabase() // where run --workspace kept it
		if err != nil {
			return err
		}
		f.db = db
	}
	tl, err := c.open(ctx, f)
	if err != nil {
		return err
	}
	defer tl.Close()
	req := fsm.RevertRequest{Session: fs.Arg(0), Turn: fs.Arg(1), ToTurn: *toTurn, Revert: *revert, By: *by, Force: *force}
	rev, err := tl.Engine.Revert(ctx, req)
	var rc *fsm.RevertConflictError
	if errors.As(err, &rc) {
		for _, c2 := range rc.Conflicts {
			fmt.Fprintf(c.stderr, "conflict: %s: expected %s, found %s\n", c2.Path, c2.Expected, c2.Found)
		}
		return fmt.Errorf("%d paths were changed since: nothing was reverted (--force overwrites them)", len(rc.Conflicts))
	}
	if err != nil {
		return err
	}
	b, _ := json.Marshal(rev)
	_, err = fmt.Fprintln(c.stdout, string(b))
	return err
}
