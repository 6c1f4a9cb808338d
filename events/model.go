package events

import "encoding/json"

const TypeModelCalled = "ModelCalled"

// ModelCalled records one model call. It never holds the whole request: only the
// request's hash, the hashes of its parts, and the items new since the previous call
// of this agent in this turn (for the first call, the items after the committed
// history). The full request is rebuilt from the log when a diff is needed.
type ModelCalled struct {
	Agent       string        `json:"agent"`
	LLM         string        `json:"llm"`
	RequestHash string        `json:"request_hash"`
	Parts       RequestParts  `json:"parts"`
	NewItems    []Item        `json:"new_items"`
	Response    ModelResponse `json:"response"`
	Usage       Usage         `json:"usage"`
	// DurationMS is how long the call took, by the engine's clock (absent in events
	// recorded before it was kept).
	DurationMS int64 `json:"duration_ms,omitempty"`
	// Cost is what the call cost by the app's price table for its llm when it ran
	// (absent without a price); Day the budget day it counts to, when the app's
	// budgets keep days in a time zone other than UTC (absent: the UTC day of the
	// event's time).
	Cost float64 `json:"cost,omitempty"`
	Day  string  `json:"day,omitempty"`
	// Policy lists the guardrail policy rules that logged or redacted the response
	// (its text and tool call arguments) before it was recorded.
	Policy []PolicyMatch `json:"policy,omitempty"`
}

func (*ModelCalled) EventType() string  { return TypeModelCalled }
func (*ModelCalled) SchemaVersion() int { return 1 }

// RequestParts summarise the parts a request hash is made of (short prefixes of their
// SHA-256), kept so a mismatch can name the part that differs.
type RequestParts struct {
	Instructions string `json:"instructions"`
	Tools        string `json:"tools"`
	Settings     string `json:"settings"`
	Items        int    `json:"items"` // how many conversation items the request carried
	// ToolHashes are each tool's own short hash, by the name the model sees, so a
	// changed tools part names the tool (absent in calls recorded before them).
	ToolHashes map[string]string `json:"tool_hashes,omitempty"`
}

// ModelResponse is what the model answered: text, tool calls, or both.
type ModelResponse struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is one function call a model asked for; Arguments is canonical JSON.
// When what the model sent was not JSON (or not JSON turnlog can keep exactly),
// Arguments holds it as {"unparsed_arguments": "..."} and Invalid says why: the call
// is answered with an invalid_arguments error and nothing runs.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Invalid   string          `json:"invalid,omitempty"`
}

// Usage counts tokens. CachedTokens are the input tokens the provider read from its
// prompt cache, ReasoningTokens the output tokens spent reasoning (both part of the
// totals, and left out when zero, as the events written before them have them).
type Usage struct {
	InputTokens     int64 `json:"input_tokens"`
	OutputTokens    int64 `json:"output_tokens"`
	CachedTokens    int64 `json:"cached_tokens,omitempty"`
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CachedTokens: u.CachedTokens + o.CachedTokens, ReasoningTokens: u.ReasoningTokens + o.ReasoningTokens}
}
