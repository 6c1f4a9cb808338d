package turnlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/mcpclient"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// SnapshotTool is a tool as a recorded session's models saw it and its policy judged
// it: what a replay needs of a tool it cannot build where it replays — an MCP
// server's, a Go function another program offered, an HTTP or command tool whose
// secrets and files stay on the server. A fixture holds them in tools.json.
type SnapshotTool struct {
	Name          string          `json:"name"`
	Description   string          `json:"description"`
	Parameters    json.RawMessage `json:"parameters"`
	Idempotent    bool            `json:"idempotent,omitempty"`
	TimeoutMS     int64           `json:"timeout_ms,omitempty"`
	MaxCalls      int             `json:"max_calls,omitempty"`
	ShowErrors    bool            `json:"show_errors,omitempty"`
	NeedsApproval bool            `json:"needs_approval,omitempty"`
	ExpiresInMS   int64           `json:"expires_in_ms,omitempty"`
	// Policy is what every call of an MCP tool acts on, as its server described the
	// tool (its annotations raise the level).
	Policy *SnapshotPolicy `json:"policy,omitempty"`
}

// SnapshotPolicy is a tool's fsm.PolicyCall, recorded.
type SnapshotPolicy struct {
	Level     int               `json:"level"`
	Actions   []policy.Action   `json:"actions,omitempty"`
	Resources []policy.Resource `json:"resources,omitempty"`
}

// Snapshot lists the tools of every agent of app as they are now, by name.
func (a *Apps) Snapshot(app string) ([]SnapshotTool, error) {
	for _, ap := range a.List {
		if ap.Name != app {
			continue
		}
		seen := map[string]SnapshotTool{}
		for _, ag := range ap.Agents {
			for _, t := range ag.Tools {
				s := t.Spec()
				st := SnapshotTool{Name: s.Name, Description: s.Description, Parameters: s.Parameters, Idempotent: s.Idempotent,
					TimeoutMS: s.Timeout.Milliseconds(), MaxCalls: s.MaxCalls, ShowErrors: s.ShowErrors, NeedsApproval: s.NeedsApproval, ExpiresInMS: s.ExpiresIn.Milliseconds()}
				if pt, ok := t.(fsm.PolicyTarget); ok && strings.Contains(s.Name, mcpclient.Separator) {
					pc := pt.PolicyCall(nil) // an MCP tool's is the same for every call
					st.Policy = &SnapshotPolicy{Level: int(pc.Level), Actions: pc.Actions, Resources: pc.Resources}
				}
				seen[s.Name] = st
			}
		}
		out := make([]SnapshotTool, 0, len(seen))
		for _, st := range seen {
			out = append(out, st)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	}
	return nil, fmt.Errorf("the config has no app %q", app)
}

// ReadSnapshot reads a fixture's tools.json (none: nil, and no error).
func ReadSnapshot(path string) (map[string]SnapshotTool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list []SnapshotTool
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string]SnapshotTool, len(list))
	for _, t := range list {
		out[t.Name] = t
	}
	return out, nil
}

// replayTool is a tool a replay-only engine knows only as its spec: it never runs.
type replayTool struct{ spec fsm.ToolSpec }

func (t *replayTool) Spec() fsm.ToolSpec { return t.spec }

func (t *replayTool) Call(context.Context, json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("tool %s is known here only by its recorded spec: a replay-only engine runs no tool", t.spec.Name)
}

// replayTarget is a replayTool with its recorded policy facts.
type replayTarget struct {
	replayTool
	call fsm.PolicyCall
}

func (t *replayTarget) PolicyCall(json.RawMessage) fsm.PolicyCall { return t.call }

// fromSnapshot builds the replay tool of a snapshot entry.
func fromSnapshot(s SnapshotTool) fsm.Tool {
	params := s.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	}
	t := replayTool{spec: fsm.ToolSpec{Name: s.Name, Description: s.Description, Parameters: params, Idempotent: s.Idempotent,
		Timeout: time.Duration(s.TimeoutMS) * time.Millisecond, MaxCalls: s.MaxCalls, ShowErrors: s.ShowErrors,
		NeedsApproval: s.NeedsApproval, ExpiresIn: time.Duration(s.ExpiresInMS) * time.Millisecond}}
	if s.Policy != nil {
		return &replayTarget{replayTool: t, call: fsm.PolicyCall{Level: policy.Level(s.Policy.Level), Actions: s.Policy.Actions, Resources: s.Policy.Resources}}
	}
	return &t
}
