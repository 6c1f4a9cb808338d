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

// ApprovalRequested asks a person a question that holds the turn. Kind tool_approval:
// approve a tool call before it runs; its path is the call's path plus "/approval".
// Kind guardrail_review: release a model response a guardrail policy rule holds; its
// path is the model call's path plus "/review", Arguments holds the held response
// ({"text","tool_calls"}) and Rule names the rule.
type ApprovalRequested struct {
	InterruptID string          `json:"interrupt_id"`
	Kind        string          `json:"kind"`
	CallID      string          `json:"call_id,omitempty"`
	Tool        string          `json:"tool,omitempty"`
	Arguments   json.RawMessage `json:"arguments"`
	Reason      string          `json:"reason"`
	Rule        string          `json:"rule,omitempty"`
	// ExpiresInMS, when set, auto-rejects the call if nobody answers within it,
	// counted from this event's time.
	ExpiresInMS int64 `json:"expires_in_ms,omitempty"`
}

func (*ApprovalRequested) EventType() string  { return TypeApprovalRequested }
func (*ApprovalRequested) SchemaVersion() int { return 1 }

// ApprovalResolved records a person's answer. Arguments, when set, are the
// reviewer's edit of the call's arguments (already validated against the schema). A
// guardrail review's answer carries Decision (approve or reject, Confirmed says the
// same) and the reviewer's notes.
type ApprovalResolved struct {
	InterruptID      string          `json:"interrupt_id"`
	Confirmed        bool            `json:"confirmed"`
	RejectionMessage string          `json:"rejection_message,omitempty"`
	Arguments        json.RawMessage `json:"arguments,omitempty"`
	Decision         string          `json:"decision,omitempty"`
	ReviewerNotes    string          `json:"reviewer_notes,omitempty"`
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
