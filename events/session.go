package events

import "encoding/json"

const TypeSessionCreated = "SessionCreated"

// SessionCreated opens a session of an app for its owner.
type SessionCreated struct {
	App      string          `json:"app"`
	Owner    string          `json:"owner"`
	Agent    string          `json:"agent"` // the agent the first turn starts with
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

func (*SessionCreated) EventType() string  { return TypeSessionCreated }
func (*SessionCreated) SchemaVersion() int { return 1 }
