package fsm

import (
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/policy"
)

// PolicyCall is what a tool call acts on, as the tool policy sees it: a shell command
// to classify, or a risk level, actions and resources.
type PolicyCall struct {
	Shell     string
	Level     policy.Level
	Actions   []policy.Action
	Resources []policy.Resource
}

// PolicyTarget is a tool that says what a call acts on. A tool that does not is an
// L2 execute of its own name: rules may name it, and it is never assumed harmless.
type PolicyTarget interface {
	PolicyCall(args json.RawMessage) PolicyCall
}

// ToolDeniedKind is the error kind the model sees for a call the policy denied.
const ToolDeniedKind = "denied"

// decide asks the app's tool policy about a call and records the verdict. A denied
// call gets its result here (it never runs: the model is told which rule, so it can
// try another way); one that needs approval goes to the approval gate with the
// verdict's details.
func (r *run) decide(s *toolSlot, pending []events.Event) []events.Event {
	sub := policy.Subject{Agent: r.agent.Name, Skill: r.conv.lastSkill, Tool: s.call.Name}
	var v policy.Verdict
	call := PolicyCall{Level: policy.L2, Actions: []policy.Action{policy.ActExecute}}
	if t, ok := s.tool.(PolicyTarget); ok {
		call = t.PolicyCall(s.args)
	}
	if call.Shell != "" {
		v = r.app.Access.Shell(sub, call.Shell)
	} else {
		v = r.app.Access.Tool(sub, call.Level, call.Actions, call.Resources)
	}
	var res []string
	for _, rs := range v.Resources {
		switch {
		case rs.Path != "":
			res = append(res, string(rs.Action)+" "+rs.Path)
		case rs.Domain != "":
			res = append(res, string(rs.Action)+" "+rs.Domain)
		}
	}
	s.verdict = &events.PolicyDecided{CallID: s.call.ID, Tool: s.call.Name, Decision: string(v.Decision), Level: v.Level.String(),
		Rule: v.Rule, Reason: v.Reason, Alternative: v.Alternative, Resources: res}
	pending = append(pending, events.MustNew(r.turn, s.path+"/policy", s.verdict))
	if v.Decision == policy.Deny {
		msg := fmt.Sprintf("the tool policy denied this call (rule %s): %s", v.Rule, v.Reason)
		if v.Alternative != "" {
			msg += "; instead: " + v.Alternative
		}
		s.result = &events.ToolResulted{CallID: s.call.ID, Tool: s.call.Name, IsError: true, ErrorKind: ToolDeniedKind, Detail: msg,
			Output: string(events.MustMarshal(map[string]any{"error": map[string]string{"kind": ToolDeniedKind, "message": msg}}))}
		pending = append(pending, events.MustNew(r.turn, s.path, s.result))
	}
	return pending
}
