package events

import "encoding/json"

const (
	TypeApprovalRequested = "ApprovalRequested"
	TypeApprovalResolved  = "ApprovalResolved"
	TypeTurnSuspended     = "TurnSuspended"
	TypeTurnResumed       = "TurnResumed"
)

// Interrupt kinds.
const (
	InterruptToolApproval    = "tool_approval"
	InterruptGuardrailReview = "guardrail_review"
)

// ApprovalRequested asks a person to approve a tool call before it runs. Its path is
// the call's path plus "/approval".
type ApprovalRequested struct {
	InterruptID string          `json:"interrupt_id"`
	Kind        string          `json:"kind"`
	CallID      string          `json:"call_id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Reason      string          `json:"reason"`
	// ExpiresInMS, when set, auto-rejects the call if nobody answers within it,
	// counted from this event's time.
	ExpiresInMS int64 `json:"expires_in_ms,omitempty"`
	// When the tool policy asks (require_approval): the call's risk level, the rule
	// that fired, what it acts on, and what to do instead if the rule says.
	Level       string   `json:"level,omitempty"`
	Rule        string   `json:"rule,omitempty"`
	Resources   []string `json:"resources,omitempty"`
	Alternative string   `json:"alternative,omitempty"`
}

func (*ApprovalRequested) EventType() string  { return TypeApprovalRequested }
func (*ApprovalRequested) SchemaVersion() int { return 1 }

// ApprovalResolved records a person's answer. Arguments, when set, are the
// reviewer's edit of the call's arguments (already validated against the schema).
type ApprovalResolved struct {
	InterruptID      string          `json:"interrupt_id"`
	Confirmed        bool            `json:"confirmed"`
	RejectionMessage string          `json:"rejection_message,omitempty"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	By               string          `json:"by"`
}

func (*ApprovalResolved) EventType() string  { return TypeApprovalResolved }
func (*ApprovalResolved) SchemaVersion() int { return 1 }

// TurnSuspended pauses a turn until every listed interrupt is answered.
type TurnSuspended struct {
	Interrupts []string `json:"interrupts"`
	Usage      Usage    `json:"usage"`
}

func (*TurnSuspended) EventType() string  { return TypeTurnSuspended }
func (*TurnSuspended) SchemaVersion() int { return 1 }

// TurnResumed follows the answers that let a suspended turn go on.
type TurnResumed struct {
	By string `json:"by"`
}

func (*TurnResumed) EventType() string  { return TypeTurnResumed }
func (*TurnResumed) SchemaVersion() int { return 1 }
