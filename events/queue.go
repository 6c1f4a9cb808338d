package events

const (
	TypeInputQueued        = "InputQueued"
	TypeQueuedInputDropped = "QueuedInputDropped"
)

// InputQueued holds a user's input that arrived while the session was busy (on_busy:
// enqueue or interrupt): it runs, in arrival order, as turn TurnID once the session
// is free. It belongs to no turn yet (its turn field is empty).
type InputQueued struct {
	TurnID string `json:"turn_id"`
	Input  string `json:"input"`
	By     string `json:"by"`
	// Interrupt: the input asked for the turn running when it came to be stopped at
	// its next safe point.
	Interrupt bool `json:"interrupt,omitempty"`
}

func (*InputQueued) EventType() string  { return TypeInputQueued }
func (*InputQueued) SchemaVersion() int { return 1 }

// QueuedInputDropped takes a queued input out of the queue before it ran: canceled
// by a person, or refused when its turn was to start.
type QueuedInputDropped struct {
	TurnID string `json:"turn_id"`
	Reason string `json:"reason"`
}

func (*QueuedInputDropped) EventType() string  { return TypeQueuedInputDropped }
func (*QueuedInputDropped) SchemaVersion() int { return 1 }
