// Package commandtool makes a tool of a program: it runs in the sandbox (its own
// folder as a read-only workspace, the app's network setting and limits), gets the
// call's canonical JSON arguments on stdin, and its stdout is the output — JSON when
// it parses as JSON, else text. A non-zero exit is a tool error carrying the tail of
// stderr.
//
// It must never run a program outside the sandbox, or decide policy or durability.
package commandtool
