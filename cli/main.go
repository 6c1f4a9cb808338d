package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/turnlog/turnlog/sandbox"
)

// Main runs the command args names as the turnlog binary does — stopped by SIGINT
// or SIGTERM, its error on stderr — and returns the process's exit status.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := Run(ctx, args, os.Stdout, os.Stderr)
	sandbox.ReleaseCgroups() // the groups kept for the next commands: there are none
	Report(err, os.Stderr)
	return ExitCode(err)
}

// Run is the whole CLI with the binary's wiring; tests call it directly.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return RunWith(ctx, args, stdout, stderr, DefaultWiring())
}

// Report writes err to stderr as the binary does, unless the command said it
// already (ErrSilentExit, an ExitStatus).
func Report(err error, stderr io.Writer) {
	if err != nil && !errors.Is(err, ErrSilentExit) && !errors.As(err, new(ExitStatus)) {
		fmt.Fprintln(stderr, "turnlog:", err)
	}
}
