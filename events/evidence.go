package events

const TypeAnswerWithoutEvidence = "AnswerWithoutEvidence"

// Actions of AnswerWithoutEvidence.
const (
	EvidenceSentBack = "sent_back" // the answer went back to the model with the note
	EvidenceStood    = "stood"     // the second such answer: it is the turn's answer, marked
)

// AnswerWithoutEvidence records an answer an agent with require_evidence gave in a
// turn in which no tool ran (none of the named ones, if it names some; calls the
// policy denied or a person rejected, handoffs and skill loads do not count): the
// first is sent back to the model once with the note, the second stands. Path
// <agent>/evidence/<n>, n counting the agent's answers checked in the turn.
type AnswerWithoutEvidence struct {
	Agent  string `json:"agent"`
	Action string `json:"action"`
	// Note is what the model was told (sent_back).
	Note string `json:"note,omitempty"`
	// Tools are the tools that would have counted (none: any tool).
	Tools []string `json:"tools,omitempty"`
}

func (*AnswerWithoutEvidence) EventType() string  { return TypeAnswerWithoutEvidence }
func (*AnswerWithoutEvidence) SchemaVersion() int { return 1 }
