package events

const (
	TypeGrantGiven   = "GrantGiven"
	TypeGrantRevoked = "GrantRevoked"
)

// GrantGiven records a person's yes, for the rest of the session, to the commands a
// pattern names when an agent's call of a tool would ask: given with the answer to
// a tool approval, at that approval's path plus "/grant". Command is an argv prefix
// ("git push"), Prefix a literal prefix of a command's words; for a tool that is not
// a shell the pattern is the tool's name. Policy is the fingerprint of the tool
// policy it was given under: under another, it no longer holds.
type GrantGiven struct {
	GrantID     string `json:"grant_id"`
	InterruptID string `json:"interrupt_id"`
	Agent       string `json:"agent"`
	Tool        string `json:"tool"`
	Command     string `json:"command,omitempty"`
	Prefix      string `json:"prefix,omitempty"`
	Policy      string `json:"policy"`
	By          string `json:"by"`
}

func (*GrantGiven) EventType() string  { return TypeGrantGiven }
func (*GrantGiven) SchemaVersion() int { return 1 }

// GrantRevoked ends a grant: a person revoked it (a session's event, between turns,
// at "grants/<id>"), or a call met it under a changed tool policy (by "turnlog", in
// that call's turn at its path plus "/grant/<id>").
type GrantRevoked struct {
	GrantID string `json:"grant_id"`
	By      string `json:"by"`
	Reason  string `json:"reason"`
}

func (*GrantRevoked) EventType() string  { return TypeGrantRevoked }
func (*GrantRevoked) SchemaVersion() int { return 1 }
