// Command turnlog runs LLM agents durably on an append-only SQLite event log. The
// commands are package cli's; this entry starts the sandbox's helper when it is one,
// and gives the sandbox the helper binary it embeds.
package main

import (
	"fmt"
	"os"

	"github.com/turnlog/turnlog/cli"
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
	os.Exit(cli.Main(os.Args[1:]))
}
