// Command turnlog runs LLM agents durably on an append-only SQLite event log.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/turnlog/turnlog/sandbox"
	"github.com/turnlog/turnlog/sandbox/helperbin"
)

func main() {
	if sandbox.IsHelper() { // started by the sandbox to become a confined command
		sandbox.HelperMain()
	}
	if err := sandbox.UseHelper(helperbin.Binary()); err != nil {
		fmt.Fprintln(os.Stderr, "turnlog:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	sandbox.ReleaseCgroups() // the groups kept for the next commands: there are none
	if err != nil && !errors.Is(err, errSilentExit) && !errors.As(err, new(exitStatus)) {
		fmt.Fprintln(os.Stderr, "turnlog:", err)
	}
	os.Exit(exitCode(err))
}

// run is the whole CLI; tests call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, stdout, stderr, defaultWiring())
}
