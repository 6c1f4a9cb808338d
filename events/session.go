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

const TypeSessionBranched = "SessionBranched"

// SessionBranched opens a session that continues another one's conversation from a
// committed turn end. Nothing is copied: the branch's history is its source's prefix
// up to SourceSeq, then its own events.
type SessionBranched struct {
	App           string          `json:"app"`
	Owner         string          `json:"owner"`
	Agent         string          `json:"agent"` // the source's active agent at the branch point
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	SourceSession string          `json:"source_session"`
	SourceSeq     int64           `json:"source_seq"`
	SourceTurn    string          `json:"source_turn"`
	// Files is what the branch's workspace files are, when asked: "restore" (as at
	// the branch point) or "keep" (as they are). Revert is the revert of the
	// source's turns after the point that "restore" made in a workspace the two
	// share.
	Files  string `json:"files,omitempty"`
	Revert string `json:"revert,omitempty"`
}

func (*SessionBranched) EventType() string  { return TypeSessionBranched }
func (*SessionBranched) SchemaVersion() int { return 1 }

// OpensSession says whether an event of type typ may be a session's first: only
// these may be appended to a session that has no events.
func OpensSession(typ string) bool {
	return typ == TypeSessionCreated || typ == TypeSessionBranched
}
