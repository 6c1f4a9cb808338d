package fsm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/turnlog/turnlog/events"
)

// Guardrail policy actions.
const (
	PolicyLog    = "log"    // record that the rule matched
	PolicyRedact = "redact" // replace every match before the text goes anywhere
	PolicyBlock  = "block"  // fail the turn with policy_denied
	PolicyReview = "review" // hold the model response until a person approves it
)

// Guardrail policy targets: the content a rule looks at.
const (
	TargetModelInput  = "model_input"  // the user's message entering a turn
	TargetModelOutput = "model_output" // the text of a model response
	TargetToolInput   = "tool_input"   // the arguments of the tool calls a model asks for
	TargetToolOutput  = "tool_output"  // what a tool returns (output and error detail)
)

// PolicyTargets lists every target in the order content flows through a turn.
var PolicyTargets = []string{TargetModelInput, TargetModelOutput, TargetToolInput, TargetToolOutput}

// PolicyRule is one rule of the project-wide guardrail policy.
type PolicyRule struct {
	Name        string
	Action      string
	Pattern     *regexp.Regexp
	Targets     []string
	Replacement string // redact: what replaces a match (default "[REDACTED:<name>]")
}

func (p PolicyRule) appliesTo(target string) bool { return slices.Contains(p.Targets, target) }

// GuardrailPolicy is applied to every model call and tool call of every agent.
//
// Rules that log or redact act once, when the content is produced, before it reaches
// the log, the model or a client; what they did is recorded with the content (the
// `policy` field of TurnStarted, ModelCalled and ToolResulted). Rules that block or
// review decide on the recorded content each time a turn is driven, so a resumed or
// replayed turn decides exactly as the first run did; they therefore see content
// after every redaction.
type GuardrailPolicy struct {
	Rules []PolicyRule
}

// Validate checks the rules and fills defaults.
func (p *GuardrailPolicy) Validate() error {
	seen := map[string]bool{}
	for i := range p.Rules {
		r := &p.Rules[i]
		at := fmt.Sprintf("guardrail_policy[%d]", i)
		switch {
		case r.Name == "":
			return fmt.Errorf("%s.name: every rule needs a name", at)
		case seen[r.Name]:
			return fmt.Errorf("%s.name: %q is used twice", at, r.Name)
		case r.Pattern == nil:
			return fmt.Errorf("%s.pattern: is required", at)
		case !slices.Contains([]string{PolicyLog, PolicyRedact, PolicyBlock, PolicyReview}, r.Action):
			return fmt.Errorf("%s.action: unknown action %q (log, redact, block or review)", at, r.Action)
		}
		seen[r.Name] = true
		if len(r.Targets) == 0 {
			r.Targets = DefaultTargets(r.Action)
		}
		for j, t := range r.Targets {
			if !slices.Contains(PolicyTargets, t) {
				return fmt.Errorf("%s.applies_to[%d]: unknown target %q (model_input, model_output, tool_input or tool_output)", at, j, t)
			}
			if r.Action == PolicyReview && t != TargetModelOutput && t != TargetToolInput {
				return fmt.Errorf("%s.applies_to[%d]: review holds a model response, so it applies to model_output and tool_input only", at, j)
			}
		}
		if r.Action == PolicyRedact {
			if r.Replacement == "" {
				r.Replacement = "[REDACTED:" + r.Name + "]"
			}
			if r.Pattern.MatchString(r.Replacement) {
				return fmt.Errorf("%s.replacement: %q matches the rule's own pattern", at, r.Replacement)
			}
		}
	}
	return nil
}

// DefaultTargets is where a rule looks when it does not say: everywhere, except that a
// review can only hold a model response.
func DefaultTargets(action string) []string {
	if action == PolicyReview {
		return []string{TargetModelOutput, TargetToolInput}
	}
	return PolicyTargets
}

// holdsModelText says whether a model's text may be changed or stopped before release,
// in which case it is not streamed as it arrives.
func (p *GuardrailPolicy) holdsModelText() bool {
	if p == nil {
		return false
	}
	for _, r := range p.Rules {
		if r.Action != PolicyLog && r.appliesTo(TargetModelOutput) {
			return true
		}
	}
	return false
}

// transformText applies the log and redact rules for target to a text.
func (p *GuardrailPolicy) transformText(target, text string, found []events.PolicyMatch) (string, []events.PolicyMatch) {
	if p == nil {
		return text, found
	}
	for _, r := range p.Rules {
		if (r.Action != PolicyLog && r.Action != PolicyRedact) || !r.appliesTo(target) {
			continue
		}
		n := len(r.Pattern.FindAllStringIndex(text, -1))
		if n == 0 {
			continue
		}
		if r.Action == PolicyRedact {
			text = r.Pattern.ReplaceAllLiteralString(text, r.Replacement)
		}
		found = append(found, events.PolicyMatch{Rule: r.Name, Action: r.Action, Target: target, Matches: n})
	}
	return text, found
}

// transformJSON applies the log and redact rules for target to every string (keys
// included) of a JSON document, which stays valid canonical JSON.
func (p *GuardrailPolicy) transformJSON(target string, raw json.RawMessage, found []events.PolicyMatch) (json.RawMessage, []events.PolicyMatch, error) {
	if p == nil || !p.transforms(target) {
		return raw, found, nil
	}
	doc, err := decodeJSON(raw)
	if err != nil {
		return raw, found, err
	}
	for _, r := range p.Rules {
		if (r.Action != PolicyLog && r.Action != PolicyRedact) || !r.appliesTo(target) {
			continue
		}
		n := 0
		doc = mapStrings(doc, func(s string) string {
			k := len(r.Pattern.FindAllStringIndex(s, -1))
			if k == 0 {
				return s
			}
			n += k
			if r.Action == PolicyRedact {
				return r.Pattern.ReplaceAllLiteralString(s, r.Replacement)
			}
			return s
		})
		if n > 0 {
			found = append(found, events.PolicyMatch{Rule: r.Name, Action: r.Action, Target: target, Matches: n})
		}
	}
	out, err := events.Marshal(doc)
	return out, found, err
}

func (p *GuardrailPolicy) transforms(target string) bool {
	for _, r := range p.Rules {
		if (r.Action == PolicyLog || r.Action == PolicyRedact) && r.appliesTo(target) {
			return true
		}
	}
	return false
}

// decision is a block or review rule that matched recorded content.
type decision struct {
	rule   PolicyRule
	target string
}

// decide finds the rule that stops or holds content: the first matching block rule,
// else the first matching review rule. texts are plain text for target; docs are JSON
// documents whose strings are checked.
func (p *GuardrailPolicy) decide(target string, texts []string, docs []json.RawMessage) (*decision, error) {
	if p == nil {
		return nil, nil
	}
	var review *decision
	for _, r := range p.Rules {
		if (r.Action != PolicyBlock && r.Action != PolicyReview) || !r.appliesTo(target) {
			continue
		}
		hit, err := matchesAny(r.Pattern, texts, docs)
		if err != nil {
			return nil, err
		}
		switch {
		case !hit:
		case r.Action == PolicyBlock:
			return &decision{rule: r, target: target}, nil
		case review == nil:
			review = &decision{rule: r, target: target}
		}
	}
	return review, nil
}

func matchesAny(re *regexp.Regexp, texts []string, docs []json.RawMessage) (bool, error) {
	for _, t := range texts {
		if re.MatchString(t) {
			return true, nil
		}
	}
	for _, raw := range docs {
		doc, err := decodeJSON(raw)
		if err != nil {
			return false, err
		}
		hit := false
		mapStrings(doc, func(s string) string {
			hit = hit || re.MatchString(s)
			return s
		})
		if hit {
			return true, nil
		}
	}
	return false, nil
}

func decodeJSON(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("guardrail policy: read JSON: %w", err)
	}
	return doc, nil
}

// mapStrings rewrites every string of a decoded JSON document, keys included.
func mapStrings(v any, f func(string) string) any {
	switch t := v.(type) {
	case string:
		return f(t)
	case []any:
		for i := range t {
			t[i] = mapStrings(t[i], f)
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[f(k)] = mapStrings(x, f)
		}
		return out
	}
	return v
}

// mergeMatches sums the matches of one rule on one target (a response's tool calls
// are checked one by one), keeping first-seen order.
func mergeMatches(found []events.PolicyMatch) []events.PolicyMatch {
	if len(found) < 2 {
		return found
	}
	var out []events.PolicyMatch
	at := map[string]int{}
	for _, m := range found {
		k := m.Rule + "\x00" + m.Target
		if i, ok := at[k]; ok {
			out[i].Matches += m.Matches
			continue
		}
		at[k] = len(out)
		out = append(out, m)
	}
	return out
}

// redactResult applies the log and redact rules to a tool's result before it is
// recorded: the output the model sees and the detail kept for audit.
func (p *GuardrailPolicy) redactResult(tr *events.ToolResulted) error {
	if p == nil || !p.transforms(TargetToolOutput) {
		return nil
	}
	var found []events.PolicyMatch
	if json.Valid([]byte(tr.Output)) {
		out, f, err := p.transformJSON(TargetToolOutput, json.RawMessage(tr.Output), nil)
		if err != nil {
			return err
		}
		tr.Output, found = string(out), f
	} else { // an agent tool answers in plain text
		tr.Output, found = p.transformText(TargetToolOutput, tr.Output, nil)
	}
	tr.Detail, found = p.transformText(TargetToolOutput, tr.Detail, found)
	if tr.Note != "" { // a reviewer's arguments, shown to the model with the output
		tr.Note, found = p.transformText(TargetToolOutput, tr.Note, found)
	}
	tr.Policy = mergeMatches(found)
	return nil
}
