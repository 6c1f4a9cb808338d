package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// File is the shape of agent.yaml.
type File struct {
	Apps map[string]App `yaml:"apps"`
	// GuardrailPolicy applies to every model and tool call of every app, in order.
	GuardrailPolicy []PolicyRule `yaml:"guardrail_policy"`
}

// App is one agent graph.
type App struct {
	StartAgent string           `yaml:"start_agent"`
	LLMs       map[string]LLM   `yaml:"llms"`
	Tools      map[string]Tool  `yaml:"tools"`
	Agents     map[string]Agent `yaml:"agents"`
	// Policy decides which tool calls may run (see package policy).
	Policy *Access `yaml:"policy"`
	// MCP lists MCP servers whose tools agents may use as <server>__<tool>.
	MCP *MCP `yaml:"mcp"`
	// OnBusy is what input arriving while a session's turn runs or waits for people
	// does: reject (409, the default), enqueue (runs after, in order) or interrupt
	// (the turn stops at its next safe point, then the input runs).
	OnBusy string `yaml:"on_busy"`
	// Webhooks are told of the app's turns (see Webhook).
	Webhooks map[string]Webhook `yaml:"webhooks"`
	// Retention erases the app's sessions idle (no event) for longer than it, e.g.
	// 720h; unset keeps them until they are erased by request.
	Retention string `yaml:"retention"`
	// Budgets bound what the app's model calls spend, per turn, session and user day.
	Budgets *AppBudgets `yaml:"budgets"`
}

// LLM registers a model under an llm_id.
type LLM struct {
	Provider string `yaml:"provider"`
	// scripted
	Rules []ScriptedRule `yaml:"rules"`
	// openai (and OpenAI-compatible servers)
	API         string   `yaml:"api"` // chat (default)
	Model       string   `yaml:"model"`
	BaseURL     string   `yaml:"base_url"`
	APIKeyEnv   string   `yaml:"api_key_env"`
	Temperature *float64 `yaml:"temperature"`
	Stream      bool     `yaml:"stream"`
	MaxRetries  *int     `yaml:"max_retries"`
	Timeout     string   `yaml:"timeout"`
	// Provider-hosted continuation is refused by name (the log is the only store).
	Store              *bool  `yaml:"store"`
	PreviousResponseID string `yaml:"previous_response_id"`
	Conversation       string `yaml:"conversation"`
	// Price is what the llm's tokens cost, per million (budgets count cost with it).
	Price *Price `yaml:"price"`
}

// ScriptedRule is one behaviour of the scripted provider: when all of When's
// conditions hold (the first matching rule answers), reply or call tools.
type ScriptedRule struct {
	When  ScriptedWhen   `yaml:"when"`
	Reply string         `yaml:"reply"`
	Tools []ScriptedCall `yaml:"tools"`
}

// ScriptedWhen holds a rule's conditions: input, output and instructions are regular
// expressions (the user's message, the last tool output, the agent's instructions),
// after_tool a tool's name ("*": any).
type ScriptedWhen struct {
	Input        string `yaml:"input"`
	AfterTool    string `yaml:"after_tool"`
	Output       string `yaml:"output"`
	Instructions string `yaml:"instructions"`
}

// ScriptedCall is a tool call a rule makes; Arguments is a JSON template.
type ScriptedCall struct {
	Name      string `yaml:"name"`
	Arguments string `yaml:"arguments"`
}

// Agent is one agent.
type Agent struct {
	LLM          string         `yaml:"llm"`
	Instructions string         `yaml:"instructions"`
	Tools        []ToolRef      `yaml:"tools"`
	MaxTurns     int            `yaml:"max_turns"`
	MaxToolCalls int            `yaml:"max_tool_calls"`
	LoopLimit    int            `yaml:"loop_limit"`
	Settings     map[string]any `yaml:"settings"`
	Guardrails   Guardrails     `yaml:"guardrails"`
	// Handoffs are the agents this one may hand the conversation to: a name, or
	// {agent, tool, description} to rename the tool the model sees.
	Handoffs []Handoff `yaml:"handoffs"`
	// Context has the agent's requests built within a token window.
	Context *Context `yaml:"context"`
	// Memory gives the agent memory_save and memory_search (true, or a mapping with
	// an embeddings provider).
	Memory *Memory `yaml:"memory"`
	// Skills are folders of skills (each a folder with a SKILL.md), relative to this
	// file: their index joins the instructions and load_skill gives a body on demand.
	Skills []string `yaml:"skills"`
	// RequireEvidence sends an answer given in a turn in which no tool ran back to the
	// model once (true, or a mapping with the tools that count and the note).
	RequireEvidence *Evidence `yaml:"require_evidence"`
	// Budgets bound what the agent's own model calls spend.
	Budgets *Budgets `yaml:"budgets"`
}

// ToolRef is one entry of an agent's tools: the name of a tool of the app, or
// {agent, name, description} to offer another agent as a tool.
type ToolRef struct {
	Tool        string `yaml:"-"`
	Agent       string `yaml:"agent"`
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// NeedsApproval suspends the turn before the agent runs until a person answers.
	NeedsApproval bool   `yaml:"needs_approval"`
	ExpiresIn     string `yaml:"expires_in"`
}

// UnmarshalYAML reads a tool entry written as a name or as an agent tool mapping.
func (t *ToolRef) UnmarshalYAML(unmarshal func(any) error) error {
	var name string
	if err := unmarshal(&name); err == nil {
		t.Tool = name
		return nil
	}
	type plain ToolRef
	return unmarshal((*plain)(t))
}

// Handoff is one entry of an agent's handoffs.
type Handoff struct {
	Agent       string `yaml:"agent"`
	Tool        string `yaml:"tool"`
	Description string `yaml:"description"`
}

// UnmarshalYAML reads a handoff written as an agent's name or as a mapping.
func (h *Handoff) UnmarshalYAML(unmarshal func(any) error) error {
	var name string
	if err := unmarshal(&name); err == nil {
		h.Agent = name
		return nil
	}
	type plain Handoff
	return unmarshal((*plain)(h))
}

// Guardrails are an agent's input and output checks, run in the order listed.
type Guardrails struct {
	Input  []Guardrail `yaml:"input"`
	Output []Guardrail `yaml:"output"`
}

// Guardrail is one check; every guardrail has a name.
type Guardrail struct {
	Name    string `yaml:"name"`
	Kind    string `yaml:"kind"`    // regex or max_length
	Pattern string `yaml:"pattern"` // regex: a match trips it
	Max     int    `yaml:"max"`     // max_length: more characters trip it
	// llm_judge: a registered model judges the text; its answer must match pass_if.
	LLM          string `yaml:"llm"`
	Instructions string `yaml:"instructions"`
	PassIf       string `yaml:"pass_if"`
}

// Error is a config error at a YAML location.
type Error struct {
	File string
	Line int
	Path string
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// Doc is a decoded agent.yaml: its content, and where each part of it is, so that
// whoever builds from it reports errors at the right line.
type Doc struct {
	File
	// Name is the file's path as errors show it; relative paths in the file are
	// relative to its folder.
	Name string
	data []byte
}

// ReadFile reads and decodes a config file.
func ReadFile(path string) (*Doc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Decode(path, data)
}

// Decode decodes agent.yaml strictly — unknown fields, duplicate keys and wrong types
// are errors with their line — and checks what needs nothing but the file.
func Decode(name string, data []byte) (*Doc, error) {
	d := &Doc{Name: name, data: data}
	if err := d.checkShape(); err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalWithOptions(data, &d.File, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		return nil, &Error{File: name, Msg: yaml.FormatError(err, false, false)}
	}
	if len(d.Apps) == 0 {
		return nil, d.ErrAt("apps", "at least one app is required")
	}
	return d, nil
}

// Dir is the folder relative paths of the file start from.
func (d *Doc) Dir() string { return filepath.Dir(d.Name) }

// ErrAt builds an error at a dotted YAML path (apps.shop.tools.t.url), with the line
// of that node — or, for a field that is missing, of the nearest enclosing one.
func (d *Doc) ErrAt(path, format string, args ...any) error {
	e := &Error{File: d.Name, Path: path, Msg: fmt.Sprintf(format, args...)}
	file, err := parser.ParseBytes(d.data, 0)
	if err != nil {
		return e
	}
	for at := path; at != ""; {
		if p, err := yaml.PathString("$." + at); err == nil {
			if node, err := p.FilterFile(file); err == nil && node != nil {
				e.Line = node.GetToken().Position.Line
				break
			}
		}
		i := strings.LastIndexAny(at, ".[")
		if i < 0 {
			break
		}
		at = at[:i]
	}
	return e
}

// SortedKeys are a map's keys in order: apps, llms, tools and agents are built in
// this order, so the first error is always the same one.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
