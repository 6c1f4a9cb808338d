package events

import "encoding/json"

// Item kinds of a conversation.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"
)

// Item is one entry of a conversation: a user or assistant message, a tool call, or
// a tool output. Arguments are canonical JSON; Output is the exact text the model sees.
type Item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   string          `json:"content,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    string          `json:"output,omitempty"`
	// Covers, on a context_summary item, is how many items from the first it stands for.
	Covers int `json:"covers,omitempty"`
}

// UserMessage is the item for a user's input.
func UserMessage(text string) Item { return Item{Type: ItemMessage, Role: "user", Content: text} }

// AssistantMessage is the item for an agent's answer.
func AssistantMessage(agent, text string) Item {
	return Item{Type: ItemMessage, Role: "assistant", Content: text, Agent: agent}
}
