package events

// PolicyMatch records that a guardrail policy rule of action log or redact matched
// content as it was produced: the rule, what it did, where it looked, and how many
// times it matched. It never holds the matched text.
type PolicyMatch struct {
	Rule    string `json:"rule"`
	Action  string `json:"action"` // log or redact
	Target  string `json:"target"` // model_input, model_output, tool_input or tool_output
	Matches int    `json:"matches"`
}
