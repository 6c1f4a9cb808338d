package events

const TypePolicyDecided = "PolicyDecided"

// PolicyDecided records what the app's tool policy decided about a tool call before
// anything ran. Path: the call's path plus "/policy".
type PolicyDecided struct {
	CallID      string   `json:"call_id"`
	Tool        string   `json:"tool"`
	Decision    string   `json:"decision"` // allow, deny or require_approval
	Level       string   `json:"level"`    // L0 … L5
	Rule        string   `json:"rule"`
	Reason      string   `json:"reason"`
	Alternative string   `json:"alternative,omitempty"`
	Resources   []string `json:"resources,omitempty"` // what the call acts on: "read src/a.go", "network example.com"
}

func (*PolicyDecided) EventType() string  { return TypePolicyDecided }
func (*PolicyDecided) SchemaVersion() int { return 1 }
