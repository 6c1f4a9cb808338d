package turnlog

import "github.com/turnlog/turnlog/sandbox"

// The sandbox confines a command by starting this very binary again as its helper.
// In a program that embeds turnlog, that start must never reach the program's own
// main (which would run unconfined, with the command's arguments): the helper takes
// over here, before any init of the program's main package and before main.
func init() {
	if sandbox.IsHelper() {
		sandbox.HelperMain()
	}
}
