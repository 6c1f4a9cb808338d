package fsm

import (
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// Handoff lets an agent give the conversation to another agent of its app. The model
// sees it as a tool without arguments; calling it switches the active agent within
// the turn, and the agent that ends the turn starts the next one.
type Handoff struct {
	Agent       string // the agent that takes over
	Tool        string // the tool name the model sees (default transfer_to_<agent>)
	Description string // what the model is told about it (a default names the agent)
}

// HandoffTool is the default tool name of a handoff to agent.
func HandoffTool(agent string) string { return "transfer_to_" + agent }

var handoffParameters = json.RawMessage(`{"additionalProperties":false,"properties":{},"type":"object"}`)

func (h Handoff) spec() ToolSpec {
	return ToolSpec{Name: h.Tool, Description: h.Description, Parameters: handoffParameters}
}

// handoffOutput is what the model that handed off sees as the call's output.
func handoffOutput(to string) string {
	return string(events.MustMarshal(map[string]string{"assistant": to}))
}

// ignoredHandoffOutput answers a second handoff in one response: only the first is taken.
func ignoredHandoffOutput(taken string) string {
	return string(events.MustMarshal(map[string]any{"error": map[string]string{"kind": "handoff_ignored",
		"message": fmt.Sprintf("only one handoff per response is taken; the conversation went to %s", taken)}}))
}

// OfferError names an entry of an agent's handoffs or tools that cannot be wired.
type OfferError struct {
	Agent string
	Field string // handoffs or tools
	Index int
	Msg   string
}

func (e *OfferError) Error() string {
	return fmt.Sprintf("agent %s: %s[%d]: %s", e.Agent, e.Field, e.Index, e.Msg)
}

// validateHandoffs fills a handoff's defaults and refuses unknown agents and tool
// names already taken (names holds the agent's tool names, and takes these).
func validateHandoffs(a *App, ag *Agent, names map[string]string) error {
	for i := range ag.Handoffs {
		h := &ag.Handoffs[i]
		if _, ok := a.Agents[h.Agent]; !ok {
			return &OfferError{Agent: ag.Name, Field: "handoffs", Index: i, Msg: fmt.Sprintf("names no agent of app %s (%q)", a.Name, h.Agent)}
		}
		if h.Tool == "" {
			h.Tool = HandoffTool(h.Agent)
		}
		if h.Description == "" {
			h.Description = fmt.Sprintf("Hand the conversation to the %s agent, which answers from then on.", h.Agent)
		}
		if other, ok := names[h.Tool]; ok {
			return &OfferError{Agent: ag.Name, Field: "handoffs", Index: i, Msg: fmt.Sprintf("the handoff to %s and %s both use the tool name %s", h.Agent, other, h.Tool)}
		}
		names[h.Tool] = fmt.Sprintf("handoffs[%d] (to %s)", i, h.Agent)
	}
	return nil
}

func (ag *Agent) handoff(name string) *Handoff {
	for i := range ag.Handoffs {
		if ag.Handoffs[i].Tool == name {
			return &ag.Handoffs[i]
		}
	}
	return nil
}
