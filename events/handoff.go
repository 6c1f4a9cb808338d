package events

const TypeHandoffOccurred = "HandoffOccurred"

// HandoffOccurred records that an agent handed the conversation to another within a
// turn: the model of From called the handoff tool, and To answers from now on. Path
// `<from>/handoff/<call id>`. It is derived from the recorded model response, so a
// replay hands off at the same point.
type HandoffOccurred struct {
	From   string `json:"from"`
	To     string `json:"to"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
}

func (*HandoffOccurred) EventType() string  { return TypeHandoffOccurred }
func (*HandoffOccurred) SchemaVersion() int { return 1 }
