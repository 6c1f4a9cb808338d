// Command turnlog-helper is the sandbox's helper alone: what turnlog starts to set
// a command up from inside its namespaces (sandbox.HelperMain), without the rest
// of turnlog — whose package initialization would cost every command more than
// the rest of its setup. make build embeds it in turnlog (package helperbin), which
// runs it from memory; a turnlog built without it starts itself as the helper.
package main

import "github.com/turnlog/turnlog/sandbox"

func main() { sandbox.HelperMain() }
