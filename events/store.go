package events

import (
	"context"
	"time"
)

// Log is the port every event store implements; one conformance suite
// (adapters/stores/storetest) tests them all.
type Log interface {
	// Append writes evs to session right after seq `after`, the last seq the caller
	// has seen (0 for a new session), assigning seqs after+1, after+2, ... and the
	// commit time. It returns the stored events once they are durable.
	// Errors: conflict (the session has moved past `after`), invalid (bad event),
	// internal (the store failed).
	Append(ctx context.Context, session string, after int64, evs []Event) ([]Event, error)
	// Events returns the events of session with seq > after, in seq order.
	// Errors: corrupt_log (unreadable data), internal.
	Events(ctx context.Context, session string, after int64) ([]Event, error)
}

// Clock returns the current time; stores and engines take one so tests pin time.
type Clock func() time.Time

// IDFunc returns a new unique, sortable identifier.
type IDFunc func() string
