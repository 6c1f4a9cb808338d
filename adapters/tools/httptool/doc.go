// Package httptool makes a tool of an HTTP endpoint an app already has: turnlog
// posts the canonical JSON arguments, with an Idempotency-Key derived from the call's
// session, turn and activity path (the same on every retry and after a restart), the
// call's names in Turnlog-* headers and an HMAC-SHA256 signature a receiver checks in
// a few lines; the answer becomes the output or a tool error the model can act on.
//
// It must never decide policy or durability (the engine does, around every call),
// follow a redirect, or retry a call that is not safe to send twice.
package httptool
