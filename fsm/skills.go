package fsm

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/skills"
)

// LoadSkillTool is the tool an agent with skills is offered to load one.
const LoadSkillTool = "load_skill"

// SkillRefusedKind is the error kind of a load_skill call that is refused.
const SkillRefusedKind = "skill_refused"

func loadSkillSpec(set *skills.Set) ToolSpec {
	return ToolSpec{Name: LoadSkillTool,
		Description: "Load one of the skills listed in your instructions: its full text and files. Load a skill only when it applies.",
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"name":{"type":"string","enum":%s}},"required":["name"],"additionalProperties":false}`,
			events.MustMarshal(set.Names()))),
		Idempotent: true}
}

// loadSkill answers a load_skill call from the skills read at start: the skill's body
// and files once per summary span, a refusal when the agent lacks a tool the skill
// needs or the policy does not grant a permission it declares. Nothing runs, so the
// output is derived and a SkillLoaded event records a load.
func (r *run) loadSkill(s *toolSlot) ([]events.Event, *ResultError) {
	ag := r.agent
	refuse := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		s.result.IsError, s.result.ErrorKind, s.result.Detail = true, SkillRefusedKind, msg
		s.result.Output = string(events.MustMarshal(map[string]any{"error": map[string]string{"kind": SkillRefusedKind, "message": msg}}))
	}
	s.result = &events.ToolResulted{CallID: s.call.ID, Tool: s.call.Name}
	name := gjson.GetBytes(s.call.Arguments, "name").String()
	sk, ok := ag.Skills.Get(name)
	if !ok {
		refuse("no skill named %q (the skills are: %s)", name, strings.Join(ag.Skills.Names(), ", "))
		return nil, nil
	}
	for _, t := range sk.RequiredTools {
		if ag.tool(t) == nil && ag.agentTool(t) == nil {
			refuse("skill %s needs the tool %s, which agent %s does not have", name, t, ag.Name)
			return nil, nil
		}
	}
	if len(sk.Permissions) > 0 && r.app.ToolPolicy == nil {
		refuse("skill %s declares permissions (%s), and app %s has no policy to grant them", name, sk.Permissions[0], r.app.Name)
		return nil, nil
	}
	for _, p := range sk.Permissions {
		if v := r.permission(name, p); v.Decision == policy.Deny {
			refuse("skill %s needs %q, which the policy does not grant (rule %s: %s); a skill never widens the policy", name, p.String(), v.Rule, v.Reason)
			return nil, nil
		}
	}
	if r.conv.skillInContext(name) {
		s.result.Output = fmt.Sprintf("skill %s is already loaded above; its instructions still apply", name)
		return nil, nil
	}
	s.result.Output = sk.Document()
	path := r.prefix + fmt.Sprintf("%s/skill/%s", ag.Name, s.call.ID)
	file := filepath.Join(sk.Shown, skills.File)
	// A skill load acts on nothing (the skills were read at start): a replay-only
	// engine loads it too.
	rec, _, found, fail := replayed[*events.SkillLoaded](r, events.TypeSkillLoaded, path, "")
	if fail != nil {
		return nil, fail
	}
	if found {
		if rec.SHA256 != sk.SHA256 {
			return nil, &ResultError{Code: events.CodeNondeterminism, Path: path, Message: fmt.Sprintf(
				"nondeterminism at %s: skill %s changed since the recording (%s was %s, is %s)", path, name, file, short(rec.SHA256), short(sk.SHA256))}
		}
	}
	return []events.Event{events.MustNew(r.turn, path, &events.SkillLoaded{CallID: s.call.ID, Name: name, Path: file, SHA256: sk.SHA256, Bytes: len(s.result.Output)})}, nil
}

// permission asks the policy about one thing a skill needs, as the skill's own call
// would be asked.
func (r *run) permission(skill string, p skills.Permission) policy.Verdict {
	sub := policy.Subject{Agent: r.agent.Name, Skill: skill}
	switch p.Action {
	case "execute":
		sub.Tool = "bash"
		return r.app.ToolPolicy.Shell(sub, p.Resource)
	case "network":
		sub.Tool = "bash"
		return r.app.ToolPolicy.Host(sub, p.Resource)
	case "read":
		sub.Tool = "read_file"
		return r.app.ToolPolicy.Tool(sub, policy.L1, []policy.Action{policy.ActRead}, []policy.Resource{{Action: policy.ActRead, Path: p.Resource}})
	case "delete":
		sub.Tool = "bash"
		return r.app.ToolPolicy.Tool(sub, policy.L4, []policy.Action{policy.ActDelete}, []policy.Resource{{Action: policy.ActDelete, Path: p.Resource}})
	}
	sub.Tool = "write_file"
	return r.app.ToolPolicy.Tool(sub, policy.L2, []policy.Action{policy.ActWrite}, []policy.Resource{{Action: policy.ActWrite, Path: p.Resource}})
}
