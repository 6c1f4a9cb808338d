package config

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/turnlog/turnlog/fsm"
)

// PolicyRule is one rule of the project-wide guardrail_policy.
type PolicyRule struct {
	Name        string   `yaml:"name"`
	Action      string   `yaml:"action"`      // log, redact, block or review
	Pattern     string   `yaml:"pattern"`     // a regular expression
	AppliesTo   []string `yaml:"applies_to"`  // model_input, model_output, tool_input, tool_output (default: all; review: model_output, tool_input)
	Replacement string   `yaml:"replacement"` // redact: what replaces a match (default [REDACTED:<name>])
}

// GuardrailPolicy is the guardrail policy every app of the file shares (nil: none).
func (d *Doc) GuardrailPolicy() (*fsm.GuardrailPolicy, error) {
	rules := d.File.GuardrailPolicy
	if len(rules) == 0 {
		return nil, nil
	}
	p := &fsm.GuardrailPolicy{}
	seen := map[string]bool{}
	for i, c := range rules {
		at := fmt.Sprintf("guardrail_policy[%d]", i)
		switch {
		case c.Name == "":
			return nil, d.ErrAt(at+".name", "every rule needs a name")
		case seen[c.Name]:
			return nil, d.ErrAt(at+".name", "%q is used twice", c.Name)
		case !slices.Contains([]string{fsm.PolicyLog, fsm.PolicyRedact, fsm.PolicyBlock, fsm.PolicyReview}, c.Action):
			return nil, d.ErrAt(at+".action", "unknown action %q (log, redact, block or review)", c.Action)
		case c.Replacement != "" && c.Action != fsm.PolicyRedact:
			return nil, d.ErrAt(at+".replacement", "goes only with action: redact")
		}
		seen[c.Name] = true
		re, err := regexp.Compile(c.Pattern)
		if err != nil || c.Pattern == "" {
			return nil, d.ErrAt(at+".pattern", "must be a regular expression: %v", err)
		}
		for j, t := range c.AppliesTo {
			if !slices.Contains(fsm.PolicyTargets, t) {
				return nil, d.ErrAt(fmt.Sprintf("%s.applies_to[%d]", at, j), "unknown target %q (model_input, model_output, tool_input or tool_output)", t)
			}
			if c.Action == fsm.PolicyReview && t != fsm.TargetModelOutput && t != fsm.TargetToolInput {
				return nil, d.ErrAt(fmt.Sprintf("%s.applies_to[%d]", at, j), "review holds a model response, so it applies to model_output and tool_input only")
			}
		}
		p.Rules = append(p.Rules, fsm.PolicyRule{Name: c.Name, Action: c.Action, Pattern: re, Targets: c.AppliesTo, Replacement: c.Replacement})
	}
	if err := p.Validate(); err != nil {
		return nil, d.ErrAt("guardrail_policy", "%v", err)
	}
	return p, nil
}
