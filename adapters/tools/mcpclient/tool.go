package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// tool is one MCP tool offered to agents.
type tool struct {
	session *mcp.ClientSession
	server  string
	name    string // the server's name for it
	spec    fsm.ToolSpec
	policy  fsm.PolicyCall
}

// policyCall is what the policy is told a call of t does: an L2 execute of its name,
// raised — never lowered — by what the server says of it: destructive is an L4
// delete, open-world reaches the network (L3). A server's claim that a tool only reads
// cannot widen the policy.
func policyCall(t *mcp.Tool) fsm.PolicyCall {
	call := fsm.PolicyCall{Level: policy.L2, Actions: []policy.Action{policy.ActExecute}}
	if a := t.Annotations; a != nil {
		if a.OpenWorldHint != nil && *a.OpenWorldHint {
			call.Level = max(call.Level, policy.L3)
			call.Actions = append(call.Actions, policy.ActNetwork)
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			call.Level = max(call.Level, policy.L4)
			call.Actions = append(call.Actions, policy.ActDelete)
		}
	}
	return call
}

// PolicyCall implements fsm.PolicyTarget.
func (t *tool) PolicyCall(json.RawMessage) fsm.PolicyCall { return t.policy }

func newTool(session *mcp.ClientSession, s Server, t *mcp.Tool) (*tool, error) {
	raw, err := json.Marshal(t.InputSchema)
	if err == nil {
		raw, err = events.Canonicalize(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: tool %s: input schema: %w", s.Name, t.Name, err)
	}
	// A tool that says it only reads, or that repeating it changes nothing, is run
	// again after a crash instead of failing the turn.
	idempotent := t.Annotations != nil && (t.Annotations.ReadOnlyHint || t.Annotations.IdempotentHint)
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return &tool{session: session, server: s.Name, name: t.Name, policy: policyCall(t), spec: fsm.ToolSpec{
		Name: s.Name + Separator + t.Name, Description: desc, Parameters: raw,
		Timeout: s.Timeout, Idempotent: idempotent, ShowErrors: true}}, nil
}

func (t *tool) Spec() fsm.ToolSpec { return t.spec }

// Call calls the tool on its server. An error result is returned as an error whose
// text the model sees; the output otherwise holds the text content, other content
// described, and the structured content when there is some.
func (t *tool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	res, err := t.session.CallTool(ctx, &mcp.CallToolParams{Name: t.name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %s: %w", t.server, t.name, err)
	}
	var text []string
	var other []map[string]any
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text = append(text, c.Text)
		case *mcp.ImageContent:
			other = append(other, map[string]any{"type": "image", "mime_type": c.MIMEType, "bytes": len(c.Data)})
		case *mcp.AudioContent:
			other = append(other, map[string]any{"type": "audio", "mime_type": c.MIMEType, "bytes": len(c.Data)})
		case *mcp.ResourceLink:
			other = append(other, map[string]any{"type": "resource_link", "uri": c.URI, "name": c.Name})
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				other = append(other, map[string]any{"type": "resource", "uri": c.Resource.URI, "text": c.Resource.Text})
			}
		}
	}
	if res.IsError {
		msg := strings.Join(text, "\n")
		if msg == "" {
			msg = "the tool reported an error"
		}
		return nil, fmt.Errorf("%s", msg)
	}
	out := map[string]any{"text": strings.Join(text, "\n")}
	if len(other) > 0 {
		out["content"] = other
	}
	if res.StructuredContent != nil {
		out["structured"] = res.StructuredContent
	}
	return json.Marshal(out)
}
