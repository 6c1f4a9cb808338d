package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
)

func cmdExport(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "export", &f, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := requireArgs(fs, 1, "one SESSION_ID"); err != nil {
		return err
	}
	store, err := openStore(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	id := fs.Arg(0)
	if _, err := store.Session(ctx, id); err != nil {
		return err
	}
	evs, err := store.Events(ctx, id, 0)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(c.stdout)
	if err := writeNDJSON(w, evs); err != nil {
		return err
	}
	return w.Flush()
}

func writeNDJSON(w *bufio.Writer, evs []events.Event) error {
	for _, ev := range evs {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	return nil
}

func cmdRebuild(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "rebuild", &f, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := requireArgs(fs, 0, "no arguments"); err != nil {
		return err
	}
	store, err := openStore(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	n, err := store.Rebuild(ctx)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "rebuilt projections from %d events\n", n)
	return err
}

func cmdMigrate(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "migrate", &f, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := requireArgs(fs, 0, "no arguments"); err != nil {
		return err
	}
	store, err := openStore(ctx, f)
	if err != nil {
		return err
	}
	defer store.Close()
	_, err = fmt.Fprintf(c.stdout, "%s is at schema version %d\n", f.db, schemaVersion())
	return err
}
