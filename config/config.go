package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"github.com/turnlog/turnlog/adapters/mcpclient"
	"github.com/turnlog/turnlog/adapters/memory"
	"github.com/turnlog/turnlog/adapters/openai"
	"github.com/turnlog/turnlog/adapters/scripted"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/skills"
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
}

// LLM registers a model under an llm_id.
type LLM struct {
	Provider string `yaml:"provider"`
	// scripted
	Rules []scripted.Rule `yaml:"rules"`
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

// Functions are the Go function tools a binary offers to configs, by name.
type Functions map[string]fsm.Tool

// Options are what the binary plugs into a config.
type Options struct {
	Functions Functions
	// WrapModel, when set, wraps every registered model (call counting, gating).
	WrapModel func(llmID string, m fsm.Model) fsm.Model
	// Workspace, when set, replaces the policy workspace of every app that has one.
	Workspace string
	// Memory is the store of agents' memory tools (nil: tools that cannot save yet,
	// for commands that run no turn).
	Memory memory.Store
	// HTTPClient, when set, is what embeddings and MCP clients use (tests).
	HTTPClient *http.Client
	// HTTPTransport, when set, carries HTTP tools' requests (tests).
	HTTPTransport http.RoundTripper
	// MCP holds the sessions of the apps' MCP servers; the caller closes it (nil: a
	// pool nobody closes — the servers end with the process).
	MCP *mcpclient.Pool
	// NeverDial are addresses (host:port) no sandboxed command may reach, even where
	// a rule names them: turnlog's own listeners.
	NeverDial []string
	// Protected are turnlog's own files (the database and its -wal and -shm, the API
	// keys file): a workspace or MCP server directory that holds one is refused. The
	// config file is protected without being named here.
	Protected []string
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

// LoadFile reads and assembles a config file.
func LoadFile(path string, opts Options) ([]*fsm.App, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Load(path, data, opts)
}

// Load decodes agent.yaml strictly and assembles its apps.
func Load(name string, data []byte, opts Options) ([]*fsm.App, error) {
	var f File
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		return nil, &Error{File: name, Msg: yaml.FormatError(err, false, false)}
	}
	b := builder{name: name, data: data, opts: opts}
	if len(f.Apps) == 0 {
		return nil, b.errAt("apps", "at least one app is required")
	}
	policy, err := b.policy(f.GuardrailPolicy)
	if err != nil {
		return nil, err
	}
	var apps []*fsm.App
	for _, appName := range sortedKeys(f.Apps) {
		a, err := b.app(appName, f.Apps[appName], policy)
		if err != nil {
			return nil, err
		}
		apps = append(apps, a)
	}
	return apps, nil
}

type builder struct {
	name string
	data []byte
	opts Options
}

// errAt builds an error at a dotted YAML path, with the line of that node if found.
func (b builder) errAt(path, format string, args ...any) error {
	e := &Error{File: b.name, Path: path, Msg: fmt.Sprintf(format, args...)}
	file, err := parser.ParseBytes(b.data, 0)
	if err != nil {
		return e
	}
	// A field that is missing has no line: the nearest enclosing node's is given.
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

func (b builder) app(name string, c App, policy *fsm.GuardrailPolicy) (*fsm.App, error) {
	at := "apps." + name
	models := map[string]fsm.Model{}
	for _, id := range sortedKeys(c.LLMs) {
		m, err := b.model(at+".llms."+id, c.LLMs[id])
		if err != nil {
			return nil, err
		}
		if b.opts.WrapModel != nil {
			m = b.opts.WrapModel(id, m)
		}
		models[id] = m
	}
	tools := map[string]fsm.Tool{}
	for _, tn := range sortedKeys(c.Tools) {
		t, err := b.tool(at+".tools."+tn, tn, c.Tools[tn], c)
		if err != nil {
			return nil, err
		}
		tools[tn] = t
	}
	mechanism := ""
	if c.Policy != nil {
		mechanism = c.Policy.Sandbox
	}
	if err := b.mcpTools(at+".mcp", c.MCP, mechanism, tools); err != nil {
		return nil, err
	}
	access, err := b.access(at+".policy", c.Policy)
	if err != nil {
		return nil, err
	}
	if err := b.builtinTools(at, c, access, tools); err != nil {
		return nil, err
	}
	app := &fsm.App{Name: name, StartAgent: c.StartAgent, Agents: map[string]*fsm.Agent{}, Policy: policy, Access: access}
	if len(c.Agents) == 0 {
		return nil, b.errAt(at+".agents", "at least one agent is required")
	}
	for _, an := range sortedKeys(c.Agents) {
		ag, err := b.agent(at+".agents."+an, an, c.Agents[an], models, tools)
		if err == nil {
			err = b.context(at+".agents."+an+".context", c.Agents[an].Context, ag, c.LLMs, models)
		}
		if err == nil && len(c.Agents[an].Skills) > 0 {
			// Relative to the config file; shown as written, wherever it is read from.
			if ag.Skills, err = skills.LoadFrom(filepath.Dir(b.name), c.Agents[an].Skills); err != nil {
				var se *skills.Error
				if !errors.As(err, &se) {
					err = b.errAt(at+".agents."+an+".skills", "%v", err)
				}
			}
		}
		if err != nil {
			return nil, err
		}
		app.Agents[an] = ag
	}
	if _, ok := app.Agents[c.StartAgent]; !ok {
		return nil, b.errAt(at+".start_agent", "names no agent of this app (%q)", c.StartAgent)
	}
	if err := app.Validate(); err != nil {
		var oe *fsm.OfferError
		if errors.As(err, &oe) {
			return nil, b.errAt(fmt.Sprintf("%s.agents.%s.%s[%d]", at, oe.Agent, oe.Field, b.configIndex(c.Agents[oe.Agent], oe)), "%s", oe.Msg)
		}
		return nil, b.errAt(at, "%v", err)
	}
	return app, nil
}

func (b builder) model(at string, c LLM) (fsm.Model, error) {
	const continuation = "provider-hosted continuation is refused: the log is the only session store"
	switch {
	case c.Store != nil && *c.Store:
		return nil, b.errAt(at+".store", "store: true keeps the conversation at the provider; %s", continuation)
	case c.PreviousResponseID != "":
		return nil, b.errAt(at+".previous_response_id", "%s", continuation)
	case c.Conversation != "":
		return nil, b.errAt(at+".conversation", "%s", continuation)
	}
	switch c.Provider {
	case "scripted":
		m, err := scripted.New(c.Rules)
		if err != nil {
			return nil, b.errAt(at, "%v", err)
		}
		return m, nil
	case "openai":
		return b.openaiModel(at, c)
	case "":
		return nil, b.errAt(at+".provider", "is required (scripted or openai)")
	}
	return nil, b.errAt(at+".provider", "unknown provider %q (known: scripted, openai)", c.Provider)
}

func (b builder) openaiModel(at string, c LLM) (fsm.Model, error) {
	if len(c.Rules) > 0 {
		return nil, b.errAt(at+".rules", "only the scripted provider takes rules")
	}
	switch c.API {
	case "", openai.APIChat, openai.APIResponses:
	default:
		return nil, b.errAt(at+".api", "unknown api %q (chat or responses)", c.API)
	}
	if c.Model == "" {
		return nil, b.errAt(at+".model", "is required")
	}
	cfg := openai.Config{API: c.API, Model: c.Model, BaseURL: c.BaseURL, Temperature: c.Temperature, Stream: c.Stream}
	if c.BaseURL != "" && !strings.HasSuffix(c.BaseURL, "/") {
		cfg.BaseURL += "/" // openai-go joins paths to the base URL as a plain prefix
	}
	if c.APIKeyEnv != "" {
		cfg.APIKey = os.Getenv(c.APIKeyEnv)
		if cfg.APIKey == "" {
			return nil, b.errAt(at+".api_key_env", "environment variable %s is empty", c.APIKeyEnv)
		}
	}
	if c.MaxRetries != nil {
		if *c.MaxRetries < 0 {
			return nil, b.errAt(at+".max_retries", "must not be negative")
		}
		cfg.MaxRetries = *c.MaxRetries
		if cfg.MaxRetries == 0 {
			cfg.MaxRetries = -1 // openai.Config reads 0 as "the default"
		}
	}
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return nil, b.errAt(at+".timeout", "must be a positive duration such as 60s, got %q", c.Timeout)
		}
		cfg.Timeout = d
	}
	m, err := openai.New(cfg)
	if err != nil {
		return nil, b.errAt(at, "%v", err)
	}
	return m, nil
}

func (b builder) agent(at, name string, c Agent, models map[string]fsm.Model, tools map[string]fsm.Tool) (*fsm.Agent, error) {
	m, ok := models[c.LLM]
	if !ok {
		return nil, b.errAt(at+".llm", "names no registered llm (%q)", c.LLM)
	}
	ag := &fsm.Agent{Name: name, Instructions: c.Instructions, LLM: c.LLM, Model: m,
		MaxTurns: c.MaxTurns, MaxToolCalls: c.MaxToolCalls, LoopFail: c.LoopLimit}
	for i, h := range c.Handoffs {
		if h.Agent == "" {
			return nil, b.errAt(fmt.Sprintf("%s.handoffs[%d]", at, i), "names no agent")
		}
		ag.Handoffs = append(ag.Handoffs, fsm.Handoff{Agent: h.Agent, Tool: h.Tool, Description: h.Description})
	}
	for _, field := range []struct {
		name string
		v    int
	}{{"max_turns", c.MaxTurns}, {"max_tool_calls", c.MaxToolCalls}, {"loop_limit", c.LoopLimit}} {
		if field.v < 0 {
			return nil, b.errAt(at+"."+field.name, "must not be negative")
		}
	}
	if c.LoopLimit != 0 && c.LoopLimit <= fsm.LoopHintRepeats {
		return nil, b.errAt(at+".loop_limit", "must be greater than %d (the hint comes first)", fsm.LoopHintRepeats)
	}
	var err error
	if ag.InputGuardrails, err = b.guardrails(at+".guardrails.input", c.Guardrails.Input, models); err != nil {
		return nil, err
	}
	if ag.OutputGuardrails, err = b.guardrails(at+".guardrails.output", c.Guardrails.Output, models); err != nil {
		return nil, err
	}
	for i, ref := range c.Tools {
		if ref.Tool == "" {
			if ref.Agent == "" {
				return nil, b.errAt(fmt.Sprintf("%s.tools[%d]", at, i), "an agent tool names its agent ({agent: NAME})")
			}
			offer := fsm.AgentTool{Agent: ref.Agent, Name: ref.Name, Description: ref.Description, NeedsApproval: ref.NeedsApproval}
			if ref.ExpiresIn != "" {
				d, err := time.ParseDuration(ref.ExpiresIn)
				if err != nil || d <= 0 || !ref.NeedsApproval {
					return nil, b.errAt(fmt.Sprintf("%s.tools[%d].expires_in", at, i), "must be a positive duration such as 30m, with needs_approval: true; got %q", ref.ExpiresIn)
				}
				offer.ExpiresIn = d
			}
			ag.AgentTools = append(ag.AgentTools, offer)
			continue
		}
		t, ok := tools[ref.Tool]
		if !ok {
			return nil, b.errAt(fmt.Sprintf("%s.tools[%d]", at, i), "names no tool of this app (%q)", ref.Tool)
		}
		ag.Tools = append(ag.Tools, t)
	}
	mem, err := b.memoryTools(at+".memory", c.Memory)
	if err != nil {
		return nil, err
	}
	ag.Tools = append(ag.Tools, mem...)
	if c.Settings != nil {
		raw, err := json.Marshal(c.Settings)
		if err == nil {
			raw, err = events.Canonicalize(raw)
		}
		if err != nil {
			var ce *events.CanonicalError
			if errors.As(err, &ce) {
				return nil, b.errAt(at+".settings", "%s: %s", ce.Path, ce.Reason)
			}
			return nil, b.errAt(at+".settings", "%v", err)
		}
		// Only per-call settings that are safe to replay cross into a call.
		if err := openai.CheckSettings(raw); err != nil {
			name, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), "settings."), " ")
			return nil, b.errAt(at+".settings."+strings.Split(name, ".")[0], "%v", err)
		}
		ag.Settings = raw
	}
	return ag, nil
}

func (b builder) guardrails(at string, cs []Guardrail, models map[string]fsm.Model) ([]fsm.Guardrail, error) {
	var out []fsm.Guardrail
	seen := map[string]bool{}
	for i, c := range cs {
		here := fmt.Sprintf("%s[%d]", at, i)
		if c.Name == "" {
			return nil, b.errAt(here+".name", "every guardrail needs a name")
		}
		if seen[c.Name] {
			return nil, b.errAt(here+".name", "%q is used twice", c.Name)
		}
		seen[c.Name] = true
		g := fsm.Guardrail{Name: c.Name, Kind: c.Kind}
		switch c.Kind {
		case fsm.GuardrailRegex:
			re, err := regexp.Compile(c.Pattern)
			if err != nil || c.Pattern == "" {
				return nil, b.errAt(here+".pattern", "must be a regular expression: %v", err)
			}
			g.Pattern = re
		case fsm.GuardrailMaxLength:
			if c.Max <= 0 {
				return nil, b.errAt(here+".max", "must be a positive number of characters")
			}
			g.Max = c.Max
		case fsm.GuardrailLLMJudge:
			m, ok := models[c.LLM]
			if !ok {
				return nil, b.errAt(here+".llm", "names no registered llm (%q)", c.LLM)
			}
			if c.Instructions == "" {
				return nil, b.errAt(here+".instructions", "the judge needs instructions")
			}
			re, err := regexp.Compile(c.PassIf)
			if err != nil || c.PassIf == "" {
				return nil, b.errAt(here+".pass_if", "must be a regular expression the passing verdict matches: %v", err)
			}
			g.LLM, g.Model, g.Instructions, g.PassIf = c.LLM, m, c.Instructions, re
		default:
			return nil, b.errAt(here+".kind", "unknown kind %q (regex, max_length or llm_judge)", c.Kind)
		}
		out = append(out, g)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// configIndex maps an agent's offer error to the entry of agent.yaml it came from: the
// fsm counts agent tools apart from the tools they are listed among.
func (b builder) configIndex(c Agent, oe *fsm.OfferError) int {
	if oe.Field != "tools" {
		return oe.Index
	}
	n := -1
	for i, ref := range c.Tools {
		if ref.Tool == "" {
			n++
		}
		if n == oe.Index {
			return i
		}
	}
	return oe.Index
}
