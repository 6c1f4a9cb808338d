// Package helperbin holds the sandbox's helper binary (package sandbox/helper),
// built into turnlog by make build: one file is still all that is shipped. It
// holds nothing in a build made without make, and turnlog then starts itself as
// the helper. It must never be imported but by the binary's main.
package helperbin

import "embed"

//go:embed all:bin
var files embed.FS

// Binary is the helper built into this binary, or nil.
func Binary() []byte {
	raw, err := files.ReadFile("bin/turnlog-helper")
	if err != nil {
		return nil
	}
	return raw
}
