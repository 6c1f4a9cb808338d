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
		v = r.app.ToolPolicy.Shell(sub, call.Shell)
	} else {
		v = r.app.ToolPolicy.Tool(sub, call.Level, call.Actions, call.Resources)
	}
	if v.Decision != policy.Allow {
		v, pending = r.granted(s, sub, v, pending)
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
	at := s.path + "/policy"
	if recorded, path, ok := r.recordedVerdict(s); ok {
		// A call decided before (the turn waited for a person, or crashed) is decided
		// again under the rules of now: the recorded decision stands unless the new one
		// is stricter, which then applies and is recorded beside it — a tightened
		// policy is never silently ignored, a loosened one never lets through what a
		// person was asked about. A call whose outcome is recorded keeps its decision.
		if r.rec.has(events.TypeToolResulted, s.path) || !policy.Stricter(v.Decision, policy.Decision(recorded.Decision)) {
			s.verdict = recorded
			pending = append(pending, events.MustNew(r.turn, path, recorded)) // logged already: emit skips it
			if recorded.Decision == string(policy.Deny) {
				if tr, ev, found, fail := replayed[*events.ToolResulted](r, events.TypeToolResulted, s.path, ""); found && fail == nil {
					s.result = tr
					return append(pending, ev)
				}
			}
			return pending
		}
		at = r.nextVerdictPath(s.path)
	}
	pending = append(pending, events.MustNew(r.turn, at, s.verdict))
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

// verdictPath is where a call's k-th decision is recorded: <call>/policy, then
// <call>/policy/2, /3 … for each stricter one.
func verdictPath(call string, k int) string {
	if k == 1 {
		return call + "/policy"
	}
	return fmt.Sprintf("%s/policy/%d", call, k)
}

// recordedVerdict is the decision a call stands under: the latest of its recorded
// PolicyDecided this store's log holds (a replay on a fresh store meets them in the
// order they were made), and its path.
func (r *run) recordedVerdict(s *toolSlot) (*events.PolicyDecided, string, bool) {
	var ev events.Event
	path, found := "", false
	for k := 1; ; k++ {
		p := verdictPath(s.path, k)
		e, ok := r.rec.get(events.TypePolicyDecided, p)
		if !ok {
			break
		}
		if k > 1 && !r.logged.has(events.TypePolicyDecided, p) {
			break
		}
		ev, path, found = e, p, true
	}
	if !found {
		return nil, "", false
	}
	pd, err := events.DecodeAs[*events.PolicyDecided](ev)
	if err != nil {
		return nil, "", false
	}
	return pd, path, true
}

// nextVerdictPath is where a call's next, stricter decision is recorded: past every
// one the recording holds.
func (r *run) nextVerdictPath(call string) string {
	k := 2
	for r.rec.has(events.TypePolicyDecided, verdictPath(call, k)) {
		k++
	}
	return verdictPath(call, k)
}
