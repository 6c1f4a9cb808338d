package events

import (
	"encoding/json"
	"strings"
)

const (
	TypeToolScheduled = "ToolScheduled"
	TypeToolResulted  = "ToolResulted"
)

// ToolScheduled is durable before the tool runs.
type ToolScheduled struct {
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Idempotent bool            `json:"idempotent"`
	// Agent names the nested agent of an agent tool (its activities follow under this
	// event's path).
	Agent string `json:"agent,omitempty"`
}

func (*ToolScheduled) EventType() string  { return TypeToolScheduled }
func (*ToolScheduled) SchemaVersion() int { return 1 }

// ToolResulted is durable as soon as the tool returns. Output is the tool's text
// (canonical JSON for structured results); the model receives it as ModelText gives it.
// A tool error is a result too: IsError is set and Output holds the documented error
// text.
type ToolResulted struct {
	CallID     string `json:"call_id"`
	Tool       string `json:"tool"`
	Output     string `json:"output"`
	IsError    bool   `json:"is_error,omitempty"`
	ErrorKind  string `json:"error_kind,omitempty"` // invalid_arguments, failed, panicked, timeout, unknown_tool
	Detail     string `json:"detail,omitempty"`     // the error message, kept for audit
	DurationMS int64  `json:"duration_ms"`
	// Agent names the nested agent of an agent tool; Output is its final answer.
	Agent string `json:"agent,omitempty"`
	// Policy lists the guardrail policy rules that logged or redacted the output (and
	// detail) before it was recorded.
	Policy []PolicyMatch `json:"policy,omitempty"`
	// Note is what turnlog tells the model with the output: that a reviewer changed
	// the call's arguments before it ran, and to what. It is recorded, so a replay
	// tells the model the same words.
	Note string `json:"note,omitempty"`
}

// ModelText is the exact text the model receives for the call: the note, when there
// is one, a blank line, then the output.
func (t *ToolResulted) ModelText() string {
	if t.Note == "" {
		return t.Output
	}
	return t.Note + "\n\n" + t.Output
}

// EditedNotePrefix starts the note of a call a reviewer edited.
const EditedNotePrefix = "A reviewer changed the arguments of this call before it ran."

// SplitNote splits the text a model received for a call into turnlog's note and the
// tool's own output (the note is "" when there is none), for readers that look into
// the output: its JSON, whether it is an error.
func SplitNote(text string) (note, output string) {
	if !strings.HasPrefix(text, EditedNotePrefix) {
		return "", text
	}
	note, output, ok := strings.Cut(text, "\n\n")
	if !ok {
		return "", text
	}
	return note, output
}

func (*ToolResulted) EventType() string  { return TypeToolResulted }
func (*ToolResulted) SchemaVersion() int { return 1 }
