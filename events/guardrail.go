package events

const (
	TypeGuardrailChecked = "GuardrailChecked"
	TypeGuardrailTripped = "GuardrailTripped"
)

// GuardrailChecked records that a guardrail passed. Path
// `<agent>/guardrail/<input|output>/<name>`.
type GuardrailChecked struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Stage string `json:"stage"` // input or output
}

func (*GuardrailChecked) EventType() string  { return TypeGuardrailChecked }
func (*GuardrailChecked) SchemaVersion() int { return 1 }

// GuardrailTripped records that a guardrail stopped the turn (it then fails with
// policy_denied). Same path as GuardrailChecked.
type GuardrailTripped struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
}

func (*GuardrailTripped) EventType() string  { return TypeGuardrailTripped }
func (*GuardrailTripped) SchemaVersion() int { return 1 }
