package events

const (
	TypeReviewRequested = "ReviewRequested"
	TypeReviewResolved  = "ReviewResolved"
)

// Review decisions.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
)

// ReviewRequested holds a model response a guardrail policy rule with action review
// matched, until a person decides. Its path is the model call's path plus "/review";
// the response itself is the ModelCalled at the model call's path, repeated here so a
// reviewer sees what they release.
type ReviewRequested struct {
	InterruptID string        `json:"interrupt_id"`
	Kind        string        `json:"kind"` // guardrail_review
	Rule        string        `json:"rule"`
	Reason      string        `json:"reason"`
	Response    ModelResponse `json:"response"`
}

func (*ReviewRequested) EventType() string  { return TypeReviewRequested }
func (*ReviewRequested) SchemaVersion() int { return 1 }

// ReviewResolved records a reviewer's decision: approve releases the held response
// as recorded, reject fails the turn with policy_denied.
type ReviewResolved struct {
	InterruptID   string `json:"interrupt_id"`
	Decision      string `json:"decision"`
	ReviewerNotes string `json:"reviewer_notes,omitempty"`
	By            string `json:"by"`
}

func (*ReviewResolved) EventType() string  { return TypeReviewResolved }
func (*ReviewResolved) SchemaVersion() int { return 1 }
