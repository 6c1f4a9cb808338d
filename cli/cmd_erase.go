package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os/user"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/projection"
)

// cmdErase erases sessions, or everything of one user, from the database file and
// prints each receipt. A turn running in a server on the same file refuses it
// (conflict); with the server up, DELETE /v1/sessions/{id} is the way.
func cmdErase(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "erase", &f, false)
	cascade := fs.Bool("cascade", false, "erase the sessions' branches too (without it a session with branches is refused)")
	owner := fs.String("user", "", "erase everything of this user instead of sessions")
	by := fs.String("by", defaultEraser(), "who asks, for the receipt")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*owner == "") == (fs.NArg() == 0) {
		fs.Usage()
		return events.Errorf(events.CodeInvalid, "expected one or more SESSION_IDs or --user USER (not both), got %q", strings.Join(fs.Args(), " "))
	}
	store, cluster, err := openStore(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	// On a database nodes share, the erasure takes the sessions' leases as a node would.
	engine, err := fsm.New(store, nil, fsm.Options{Clock: time.Now, NewID: turnlog.NewULIDs(), Cluster: cluster})
	if err != nil {
		return err
	}
	print := func(rec projection.ErasureReceipt) error {
		b, _ := json.Marshal(rec)
		_, err := fmt.Fprintln(c.stdout, string(b))
		return err
	}
	if *owner != "" {
		rec, err := engine.EraseUser(ctx, *owner, *by)
		if err != nil {
			return err
		}
		return print(rec)
	}
	for _, id := range fs.Args() {
		rec, err := engine.EraseSession(ctx, id, *by, *cascade)
		if err != nil {
			return fmt.Errorf("erase %s: %w", id, err)
		}
		if err := print(rec); err != nil {
			return err
		}
	}
	return nil
}

// defaultEraser names the person at the terminal, for the receipt.
func defaultEraser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}
