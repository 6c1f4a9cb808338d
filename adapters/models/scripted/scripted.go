package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// Rule is one scripted behaviour. All of When's conditions must hold; the first
// matching rule answers.
type Rule struct {
	When  When       `yaml:"when"`
	Reply string     `yaml:"reply"`
	Tools []ToolCall `yaml:"tools"`
}

// When holds a rule's conditions.
type When struct {
	// Input is a regular expression matched against the turn's user message.
	Input string `yaml:"input"`
	// AfterTool matches when the conversation ends with outputs of this tool ("*" any).
	AfterTool string `yaml:"after_tool"`
	// Output is a regular expression matched against the last tool output.
	Output string `yaml:"output"`
	// Instructions is a regular expression matched against the agent's instructions:
	// a scripted agent can follow what it is told, and stop when told otherwise.
	Instructions string `yaml:"instructions"`
}

// ToolCall is a tool call a rule makes; Arguments is a JSON template.
type ToolCall struct {
	Name      string `yaml:"name"`
	Arguments string `yaml:"arguments"`
}

type compiledRule struct {
	Rule
	input, output, instructions *regexp.Regexp
}

// Model is a scripted model.
type Model struct {
	rules []compiledRule
	calls atomic.Int64
}

var _ fsm.Model = (*Model)(nil)

// New compiles rules. Errors name the rule and field.
func New(rules []Rule) (*Model, error) {
	if len(rules) == 0 {
		return nil, fmt.Errorf("rules: at least one rule is required")
	}
	m := &Model{}
	for i, r := range rules {
		cr := compiledRule{Rule: r}
		if r.When.Input != "" {
			re, err := regexp.Compile(r.When.Input)
			if err != nil {
				return nil, fmt.Errorf("rules[%d].when.input: %w", i, err)
			}
			cr.input = re
		}
		if r.When.Output != "" {
			re, err := regexp.Compile(r.When.Output)
			if err != nil {
				return nil, fmt.Errorf("rules[%d].when.output: %w", i, err)
			}
			cr.output = re
		}
		if r.When.Instructions != "" {
			re, err := regexp.Compile(r.When.Instructions)
			if err != nil {
				return nil, fmt.Errorf("rules[%d].when.instructions: %w", i, err)
			}
			cr.instructions = re
		}
		if r.Reply == "" && len(r.Tools) == 0 {
			return nil, fmt.Errorf("rules[%d]: needs a reply or tools", i)
		}
		for j, tc := range r.Tools {
			if tc.Name == "" {
				return nil, fmt.Errorf("rules[%d].tools[%d].name: is empty", i, j)
			}
		}
		m.rules = append(m.rules, cr)
	}
	return m, nil
}

// Calls reports how many calls this model answered.
func (m *Model) Calls() int64 { return m.calls.Load() }

// Call answers with the first matching rule.
func (m *Model) Call(_ context.Context, req fsm.ModelRequest) (fsm.ModelResponse, error) {
	// The same request always gets the same response, streamed or not.
	m.calls.Add(1)
	if req.Purpose == fsm.PurposeCompaction {
		return summarise(req), nil
	}
	v := view(req.Items)
	v.instructions = req.Instructions
	for _, r := range m.rules {
		match, ok := r.matches(v)
		if !ok {
			continue
		}
		resp := fsm.ModelResponse{}
		for i, tc := range r.Tools {
			args := expand(tc.Arguments, v, match)
			if args == "" {
				args = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, events.ToolCall{
				ID: fmt.Sprintf("call_%d_%d", len(req.Items), i+1), Name: tc.Name, Arguments: json.RawMessage(args)})
		}
		if r.Reply != "" {
			resp.Text = expand(r.Reply, v, match)
			if req.OnText != nil { // stream the answer a word at a time, as a real model would
				for _, piece := range strings.SplitAfter(resp.Text, " ") {
					req.OnText(piece)
				}
			}
		}
		resp.Usage = events.Usage{InputTokens: int64(len(req.Items)) * 10, OutputTokens: int64(len(resp.Text)/4 + 1)}
		return resp, nil
	}
	return fsm.ModelResponse{}, fmt.Errorf("scripted model: no rule matches")
}

// turnView is what rules look at: the turn's user input, the tool outputs at the end
// of the conversation, and the agent's instructions. Building it reads only the
// current turn.
type turnView struct {
	input        string
	instructions string
	outputs      []toolOutput // the trailing run of outputs, in call order
	byTool       map[string]toolOutput
}

type toolOutput struct {
	name, args, output string
}

func view(items []events.Item) turnView {
	v := turnView{byTool: map[string]toolOutput{}}
	start := len(items)
	for start > 0 && !(items[start-1].Type == events.ItemMessage && items[start-1].Role == "user") {
		start--
	}
	if start > 0 {
		v.input = items[start-1].Content
	}
	calls := map[string]events.Item{}
	for _, it := range items[start:] {
		switch it.Type {
		case events.ItemFunctionCall:
			calls[it.CallID] = it
		case events.ItemFunctionCallOutput:
			c := calls[it.CallID]
			v.byTool[c.Name] = toolOutput{name: c.Name, args: string(c.Arguments), output: unwrap(it.Output)}
		}
	}
	for i := len(items) - 1; i >= start && items[i].Type == events.ItemFunctionCallOutput; i-- {
		c := calls[items[i].CallID]
		v.outputs = append([]toolOutput{{name: c.Name, args: string(c.Arguments), output: unwrap(items[i].Output)}}, v.outputs...)
	}
	return v
}

// unwrap is a tool output without the untrusted-data marker a context-managed request
// wraps it in: rules read the tool's own text.
func unwrap(output string) string {
	_, output = events.SplitNote(output) // a reviewer's note is not the tool's output
	if !strings.HasPrefix(output, "<tool_output ") || !strings.HasSuffix(output, "</tool_output>") {
		return output
	}
	lines := strings.Split(output, "\n")
	if len(lines) < 3 {
		return output
	}
	return strings.Join(lines[2:len(lines)-1], "\n")
}

func (r compiledRule) matches(v turnView) ([]string, bool) {
	var match []string
	if r.input != nil {
		match = r.input.FindStringSubmatch(v.input)
		if match == nil {
			return nil, false
		}
	}
	if r.output != nil && (len(v.outputs) == 0 || !r.output.MatchString(v.outputs[len(v.outputs)-1].output)) {
		return nil, false
	}
	if r.instructions != nil && !r.instructions.MatchString(v.instructions) {
		return nil, false
	}
	switch r.When.AfterTool {
	case "":
		// A rule that calls tools without after_tool fires only at the start of a
		// turn, so a scripted agent cannot loop by accident.
		if len(r.Tools) > 0 && len(v.outputs) > 0 {
			return nil, false
		}
	case "*":
		if len(v.outputs) == 0 {
			return nil, false
		}
	default:
		found := false
		for _, o := range v.outputs {
			found = found || o.name == r.When.AfterTool
		}
		if !found {
			return nil, false
		}
	}
	return match, true
}

var placeholder = regexp.MustCompile(`\{\{\s*([a-z_]+)(?:\.([^}\s]+))?\s*\}\}`)

// expand fills {{input}}, {{match.N}}, {{output.PATH}} (the last output),
// {{args.PATH}} (its arguments), {{tool.NAME.PATH}} and {{outputs}}.
func expand(tmpl string, v turnView, match []string) string {
	return placeholder.ReplaceAllStringFunc(tmpl, func(ph string) string {
		m := placeholder.FindStringSubmatch(ph)
		key, path := m[1], m[2]
		var last toolOutput
		if len(v.outputs) > 0 {
			last = v.outputs[len(v.outputs)-1]
		}
		switch key {
		case "input":
			return v.input
		case "match":
			if n, err := strconv.Atoi(path); err == nil && n < len(match) {
				return match[n]
			}
		case "output":
			return lookup(last.output, path)
		case "args":
			return lookup(last.args, path)
		case "tool":
			name, p, _ := strings.Cut(path, ".")
			return lookup(v.byTool[name].output, p)
		case "outputs":
			parts := make([]string, len(v.outputs))
			for i, o := range v.outputs {
				parts[i] = o.output
			}
			return strings.Join(parts, "; ")
		}
		return ""
	})
}

func lookup(doc, path string) string {
	if path == "" {
		return doc
	}
	return gjson.Get(doc, path).String()
}
