package turns

import (
	"slices"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// Request asks for a turn of a session: a new one with Input, or the suspended one
// resumed with Answers.
type Request struct {
	Session, User string
	// Input starts a turn; Answers resume the suspended one (one of the two).
	Input   *string
	Answers map[string]fsm.Answer
	// OnBusy is what Input does if the session is busy: fsm.OnBusyReject,
	// OnBusyEnqueue or OnBusyInterrupt ("": the app's on_busy, else reject).
	OnBusy string
	// Background: the caller does not wait for the turn (it follows its resource).
	Background bool
	// Stream: the caller follows the turn live; the Outcome's Deltas are subscribed
	// before the turn starts, so no delta is missed.
	Stream bool
	// After is the id (seq) of the last event the caller has of this turn — a
	// stream's Last-Event-ID: without a key, input with After continues the turn the
	// seq belongs to instead of starting another.
	After *int64
	// Key makes the request safe to repeat (Key.Value ""; no key); its Owner is User.
	Key Key
}

// check refuses a request that asks nothing, or two things at once.
func (r Request) check() error {
	switch {
	case r.Input != nil && r.Answers != nil:
		return events.FieldError(events.CodeInvalid, "body", "give either input or resume_map, not both")
	case r.Input == nil && r.Answers == nil:
		return events.FieldError(events.CodeInvalid, "input", "is required (or resume_map to answer a suspended turn)")
	case r.OnBusy != "" && (r.Input == nil || !slices.Contains(fsm.OnBusyModes(), r.OnBusy)):
		return events.FieldError(events.CodeInvalid, "on_busy", "must be one of %v, with input", fsm.OnBusyModes())
	case r.Background && r.Stream:
		return events.FieldError(events.CodeInvalid, "background", "goes without stream: follow the turn at its /stream")
	case r.After != nil && *r.After < 0:
		return events.FieldError(events.CodeInvalid, "Last-Event-ID", "must be an event id (a seq), got %d", *r.After)
	}
	return nil
}

func (r Request) key() Key {
	k := r.Key
	k.Owner = r.User
	return k
}

func (r Request) after() int64 {
	if r.After == nil {
		return 0
	}
	return *r.After
}
