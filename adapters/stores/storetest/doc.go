// Package storetest is the conformance suite every turnlog store runs: one
// Exercise(t, Harness) that a store's own tests call with a way to open an empty
// store of theirs. It checks what the store ports promise — appends and seq
// conflicts, unsynced appends, a group commit with a failing member, blobs, the read
// models a turn's events fold into, branches and their histories, running,
// suspended and queued turns, memories and their search, idempotency keys,
// inspector sign-ins, erasure, and rebuilding the read models — through the ports
// alone, never a store's SQL.
//
// It must never import a store: the stores import it, from their tests.
package storetest
