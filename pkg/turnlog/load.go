package turnlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/delivery/webhook"
	"github.com/turnlog/turnlog/adapters/models/openai"
	"github.com/turnlog/turnlog/adapters/tools/mcpclient"
	"github.com/turnlog/turnlog/adapters/tools/plan"
	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
	"github.com/turnlog/turnlog/skills"
)

// Functions are the Go function tools a program offers its apps, by the name
// agent.yaml gives them (function: NAME, or the tool's own name).
type Functions map[string]fsm.Tool

// Apps are the apps of a config, built, and what they hold open: the sessions of
// their MCP servers.
type Apps struct {
	List []*fsm.App
	// Webhooks are every app's webhooks.
	Webhooks []webhook.Hook
	mcp      *mcpclient.Pool
	shells   []appShell // the apps with the built-in tools
}

// appShell is an app's workspaces and the sandbox its commands run in.
type appShell struct {
	app  string
	wss  *workspacetools.Workspaces
	spec sandbox.Spec
}

// CommittedSecret is a workspace whose git history holds files the default-deny
// list masks.
type CommittedSecret struct {
	App, Workspace string
	Files          []string
}

// CommittedSecrets lists, for every app with the built-in tools, the workspaces
// whose git history holds files the default-deny list masks: any command the
// policy allows can read them through git's objects (git show HEAD:.env). git runs
// in each app's sandbox, the workspace read-only.
func (a *Apps) CommittedSecrets(ctx context.Context) ([]CommittedSecret, error) {
	var out []CommittedSecret
	var errs []error
	for _, sh := range a.shells {
		found, err := sh.wss.CommittedSecrets(ctx, sh.spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s: %w", sh.app, err))
		}
		for _, dir := range config.SortedKeys(found) {
			out = append(out, CommittedSecret{App: sh.app, Workspace: dir, Files: found[dir]})
		}
	}
	return out, errors.Join(errs...)
}

// Close ends the apps' MCP servers.
func (a *Apps) Close() error {
	if a == nil || a.mcp == nil {
		return nil
	}
	return a.mcp.Close()
}

// LoadApps reads agent.yaml (opts.Config, or opts.ConfigData) and builds its apps:
// models, tools of every kind, MCP servers connected with ctx, workspaces. Memory
// tools get opts.Memory (without one, calls of them fail: for commands that run no
// turn). Errors are *config.Error with the file, line and field.
func LoadApps(ctx context.Context, opts Options) (*Apps, error) {
	doc, err := opts.decode()
	if err != nil {
		return nil, err
	}
	if state, err := opts.stateDir(); err == nil {
		// The servers' data and the commands' homes: no workspace may hold them.
		if hasStdioServers(doc) {
			opts.Protected = append(append([]string{}, opts.Protected...), filepath.Join(state, "mcp"))
		}
		if len(opts.Protected) > 0 { // a caller that names its own files (see exposes)
			opts.Protected = append(append([]string{}, opts.Protected...), filepath.Join(state, "homes"))
		}
	}
	b := builder{ctx: ctx, doc: doc, opts: opts, mcp: &mcpclient.Pool{}, sandboxed: new(bool), roots: &[]workspaceRoot{}, shells: &[]appShell{}}
	policy, err := doc.GuardrailPolicy()
	if err != nil {
		return nil, err
	}
	apps := &Apps{mcp: b.mcp}
	var problems config.Errors // one per app: each app is checked
	for _, name := range config.SortedKeys(doc.Apps) {
		a, err := b.app(name, doc.Apps[name], policy)
		var hooks []webhook.Hook
		if err == nil && !opts.IgnoreWebhooks && !opts.ReplayOnly && !opts.ReadOnly {
			hooks, err = b.webhooks("apps."+name, name, doc.Apps[name].Webhooks)
		}
		if problems.Add(err) {
			continue
		}
		if err != nil {
			apps.Close()
			return nil, err
		}
		apps.List, apps.Webhooks = append(apps.List, a), append(apps.Webhooks, hooks...)
	}
	if err := problems.Err(); err != nil {
		apps.Close()
		return nil, err
	}
	if *b.sandboxed {
		if err := ownFilesUnreadable(doc.Name, opts.Protected, sandbox.SystemDirs); err != nil {
			apps.Close()
			return nil, err
		}
	}
	apps.shells = *b.shells
	// A folder named for one run (turnlog run --workspace) serves the app it runs.
	if opts.Workspace == "" {
		if err := b.rootsApart(*b.roots); err != nil {
			apps.Close()
			return nil, err
		}
	}
	return apps, nil
}

// decode reads the config the options name.
func (o Options) decode() (*config.Doc, error) {
	switch {
	case o.ConfigData != nil:
		name := o.Config
		if name == "" {
			name = "agent.yaml"
		}
		return config.Decode(name, o.ConfigData)
	case o.Config != "":
		return config.ReadFile(o.Config)
	}
	return nil, errors.New("no config: set Options.Config to agent.yaml's path (or ConfigData to its content)")
}

// builder builds the apps of one config.
type builder struct {
	ctx  context.Context
	doc  *config.Doc
	opts Options
	mcp  *mcpclient.Pool
	// folders are the app's command tools' and stdio servers' folders, which no
	// workspace may overlap.
	folders *[]sandboxFolder
	// sandboxed says an app runs programs in the sandbox (built-in tools, command
	// tools, stdio servers).
	sandboxed *bool
	// roots are the apps' workspace roots, which may not overlap (rootsApart).
	roots *[]workspaceRoot
	// shells are the apps with the built-in tools.
	shells *[]appShell
}

// sandboxFolder is a folder a program of the app runs from, and where the config
// names it.
type sandboxFolder struct{ at, dir, what string }

func (b builder) app(name string, c config.App, policy *fsm.GuardrailPolicy) (*fsm.App, error) {
	at := "apps." + name
	b.folders = &[]sandboxFolder{}
	// The models and the tools are each checked whole, every problem told; the
	// agents, which name them, only once they all built.
	var problems config.Errors
	models := map[string]fsm.Model{}
	for _, id := range config.SortedKeys(c.LLMs) {
		m, err := b.model(at+".llms."+id, c.LLMs[id])
		if err != nil {
			if problems.Add(err) {
				continue
			}
			return nil, err
		}
		if b.opts.WrapModel != nil {
			m = b.opts.WrapModel(id, m)
		}
		models[id] = m
	}
	tools := map[string]fsm.Tool{}
	for _, tn := range config.SortedKeys(c.Tools) {
		if tn == plan.ToolName {
			problems.Add(b.doc.ErrAt(at+".tools."+tn, "is turnlog's plan tool: list it in an agent's tools, do not declare it"))
			continue
		}
		if b.builtinSettings(tn, c.Tools[tn]) {
			continue // settings of a built-in tool: builtinTools applies them
		}
		t, err := b.tool(at+".tools."+tn, tn, c.Tools[tn], c)
		if err != nil {
			if problems.Add(err) {
				continue
			}
			return nil, err
		}
		tools[tn] = t
	}
	if err := problems.Err(); err != nil {
		return nil, err
	}
	access, err := b.doc.Access(at+".policy", c.Policy, b.opts.Workspace)
	if err != nil {
		return nil, err
	}
	var listed []string // the tools the agents list, by name
	for _, an := range config.SortedKeys(c.Agents) {
		for _, ref := range c.Agents[an].Tools {
			listed = append(listed, ref.Tool)
		}
	}
	if err := b.mcpTools(at+".mcp", name, c.MCP, access, tools, listed); err != nil {
		return nil, err
	}
	if err := b.builtinTools(at, c, access, tools); err != nil {
		return nil, err
	}
	if slices.Contains(listed, plan.ToolName) {
		tools[plan.ToolName] = plan.New() // offered only to the agents that list it
	}
	if err := b.foldersOutsideWorkspace(at, access); err != nil {
		return nil, err
	}
	if len(*b.folders) > 0 || (access != nil && tools["bash"] != nil) {
		*b.sandboxed = true
	}
	if c.OnBusy != "" && !slices.Contains(fsm.OnBusyModes(), c.OnBusy) {
		return nil, b.doc.ErrAt(at+".on_busy", "unknown on_busy %q (%v)", c.OnBusy, fsm.OnBusyModes())
	}
	app := &fsm.App{Name: name, StartAgent: c.StartAgent, Agents: map[string]*fsm.Agent{}, GuardrailPolicy: policy, ToolPolicy: access, OnBusy: c.OnBusy}
	if c.Policy != nil {
		app.SharedBranchRestore = c.Policy.SharedBranchRestore
		if u := c.Policy.Undo; u != nil {
			app.UndoCaps = fsm.UndoCaps{TurnBytes: u.TurnBytes, SessionBytes: u.SessionBytes}
		}
	}
	for _, sh := range *b.shells {
		if sh.app == name {
			app.Workspace = sh.wss // what Revert puts back
		}
	}
	if c.Retention != "" {
		if app.Retention, err = b.duration(at+".retention", c.Retention, "720h"); err != nil {
			return nil, err
		}
	}
	if c.Budgets != nil {
		if app.Budgets, err = b.doc.Budgets(at+".budgets", &c.Budgets.Budgets); err != nil {
			return nil, err
		}
		app.BudgetExtendBy = c.Budgets.ExtendBy
	}
	if app.BudgetZone, err = b.doc.BudgetZone(at+".budgets", c.Budgets); err != nil {
		return nil, err
	}
	app.Prices = b.doc.Prices(c.LLMs)
	app.Models = models
	if err := b.doc.CheckPrices(at, c); err != nil {
		return nil, err
	}
	if len(c.Agents) == 0 {
		return nil, b.doc.ErrAt(at+".agents", "at least one agent is required")
	}
	for _, an := range config.SortedKeys(c.Agents) {
		ag, err := b.agent(at+".agents."+an, an, c.Agents[an], models, tools)
		if err == nil {
			ag.ModelName = c.LLMs[c.Agents[an].LLM].Model // the tokens a budget counts are the model's
		}
		if err == nil {
			err = b.doc.Context(at+".agents."+an+".context", c.Agents[an].Context, ag, c.LLMs, models)
		}
		if err == nil && len(c.Agents[an].Skills) > 0 {
			// Relative to the config file; shown as written, wherever it is read from.
			if ag.Skills, err = skills.LoadFrom(b.doc.Dir(), c.Agents[an].Skills); err != nil {
				var se *skills.Error
				if !errors.As(err, &se) {
					err = b.doc.ErrAt(at+".agents."+an+".skills", "%v", err)
				}
			}
		}
		if err != nil {
			if problems.Add(err) {
				continue
			}
			return nil, err
		}
		app.Agents[an] = ag
	}
	if _, ok := c.Agents[c.StartAgent]; !ok {
		problems.Add(b.doc.ErrAt(at+".start_agent", "names no agent of this app (%q)", c.StartAgent))
	}
	if err := problems.Err(); err != nil {
		return nil, err
	}
	if err := app.Validate(); err != nil {
		var oe *fsm.OfferError
		if errors.As(err, &oe) {
			return nil, b.doc.ErrAt(fmt.Sprintf("%s.agents.%s.%s[%d]", at, oe.Agent, oe.Field, b.configIndex(c.Agents[oe.Agent], oe)), "%s", oe.Msg)
		}
		return nil, b.doc.ErrAt(at, "%v", err)
	}
	return app, nil
}

func (b builder) agent(at, name string, c config.Agent, models map[string]fsm.Model, tools map[string]fsm.Tool) (*fsm.Agent, error) {
	m, ok := models[c.LLM]
	if !ok {
		return nil, b.doc.ErrAt(at+".llm", "names no registered llm (%q)", c.LLM)
	}
	ag := &fsm.Agent{Name: name, Instructions: c.Instructions, LLM: c.LLM, Model: m,
		MaxTurns: c.MaxTurns, MaxToolCalls: c.MaxToolCalls, LoopFail: c.LoopLimit}
	for i, h := range c.Handoffs {
		if h.Agent == "" {
			return nil, b.doc.ErrAt(fmt.Sprintf("%s.handoffs[%d]", at, i), "names no agent")
		}
		ag.Handoffs = append(ag.Handoffs, fsm.Handoff{Agent: h.Agent, Tool: h.Tool, Description: h.Description})
	}
	for _, field := range []struct {
		name string
		v    int
	}{{"max_turns", c.MaxTurns}, {"max_tool_calls", c.MaxToolCalls}, {"loop_limit", c.LoopLimit}} {
		if field.v < 0 {
			return nil, b.doc.ErrAt(at+"."+field.name, "must not be negative")
		}
	}
	if c.LoopLimit != 0 && c.LoopLimit <= fsm.LoopHintRepeats {
		return nil, b.doc.ErrAt(at+".loop_limit", "must be greater than %d (the hint comes first)", fsm.LoopHintRepeats)
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
				return nil, b.doc.ErrAt(fmt.Sprintf("%s.tools[%d]", at, i), "an agent tool names its agent ({agent: NAME})")
			}
			offer := fsm.AgentTool{Agent: ref.Agent, Name: ref.Name, Description: ref.Description, NeedsApproval: ref.NeedsApproval}
			if ref.ExpiresIn != "" {
				d, err := time.ParseDuration(ref.ExpiresIn)
				if err != nil || d <= 0 || !ref.NeedsApproval {
					return nil, b.doc.ErrAt(fmt.Sprintf("%s.tools[%d].expires_in", at, i), "must be a positive duration such as 30m, with needs_approval: true; got %q", ref.ExpiresIn)
				}
				offer.ExpiresIn = d
			}
			ag.AgentTools = append(ag.AgentTools, offer)
			continue
		}
		t, ok := tools[ref.Tool]
		if !ok {
			return nil, b.doc.ErrAt(fmt.Sprintf("%s.tools[%d]", at, i), "names no tool of this app (%q)", ref.Tool)
		}
		ag.Tools = append(ag.Tools, t)
	}
	mem, err := b.memoryTools(at+".memory", c.Memory)
	if err != nil {
		return nil, err
	}
	ag.Tools = append(ag.Tools, mem...)
	if ag.Budgets, err = b.doc.Budgets(at+".budgets", c.Budgets); err != nil {
		return nil, err
	}
	if ag.RequireEvidence, err = b.evidence(at+".require_evidence", c, ag); err != nil {
		return nil, err
	}
	if c.Settings != nil {
		raw, err := json.Marshal(c.Settings)
		if err == nil {
			raw, err = events.Canonicalize(raw)
		}
		if err != nil {
			var ce *events.CanonicalError
			if errors.As(err, &ce) {
				return nil, b.doc.ErrAt(at+".settings", "%s: %s", ce.Path, ce.Reason)
			}
			return nil, b.doc.ErrAt(at+".settings", "%v", err)
		}
		// Only per-call settings that are safe to replay cross into a call.
		if err := openai.CheckSettings(raw); err != nil {
			name, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), "settings."), " ")
			return nil, b.doc.ErrAt(at+".settings."+strings.Split(name, ".")[0], "%v", err)
		}
		ag.Settings = raw
	}
	return ag, nil
}

// evidence is an agent's require_evidence; the tools it names must be the agent's.
func (b builder) evidence(at string, c config.Agent, ag *fsm.Agent) (*fsm.EvidenceRule, error) {
	e := c.RequireEvidence
	if e == nil || !e.Enabled {
		return nil, nil
	}
	offered := map[string]bool{}
	for _, ref := range c.Tools {
		switch {
		case ref.Tool != "":
			offered[ref.Tool] = true
		case ref.Name != "": // an agent tool, by the name the model sees
			offered[ref.Name] = true
		default:
			offered[ref.Agent] = true
		}
	}
	for _, t := range ag.Tools {
		offered[t.Spec().Name] = true
	}
	for i, name := range e.Tools {
		if !offered[name] {
			return nil, b.doc.ErrAt(fmt.Sprintf("%s.tools[%d]", at, i), "names no tool of this agent (%q)", name)
		}
	}
	return &fsm.EvidenceRule{Tools: e.Tools, Note: e.Note}, nil
}

func (b builder) guardrails(at string, cs []config.Guardrail, models map[string]fsm.Model) ([]fsm.Guardrail, error) {
	var out []fsm.Guardrail
	seen := map[string]bool{}
	for i, c := range cs {
		here := fmt.Sprintf("%s[%d]", at, i)
		if c.Name == "" {
			return nil, b.doc.ErrAt(here+".name", "every guardrail needs a name")
		}
		if seen[c.Name] {
			return nil, b.doc.ErrAt(here+".name", "%q is used twice", c.Name)
		}
		seen[c.Name] = true
		g := fsm.Guardrail{Name: c.Name, Kind: c.Kind}
		switch c.Kind {
		case fsm.GuardrailRegex:
			if c.Pattern == "" {
				return nil, b.doc.ErrAt(here+".pattern", "is required with kind: regex (the RE2 expression a tripping text matches)")
			}
			re, err := regexp.Compile(c.Pattern)
			if err != nil {
				return nil, b.doc.ErrAt(here+".pattern", "must be a regular expression: %v", err)
			}
			g.Pattern = re
		case fsm.GuardrailMaxLength:
			if c.Max <= 0 {
				return nil, b.doc.ErrAt(here+".max", "is required with kind: max_length, a positive number of characters")
			}
			g.Max = c.Max
		case fsm.GuardrailLLMJudge:
			m, ok := models[c.LLM]
			if !ok {
				return nil, b.doc.ErrAt(here+".llm", "names no registered llm (%q)", c.LLM)
			}
			if c.Instructions == "" {
				return nil, b.doc.ErrAt(here+".instructions", "the judge needs instructions")
			}
			if c.PassIf == "" {
				return nil, b.doc.ErrAt(here+".pass_if", "is required with kind: llm_judge (a regular expression the passing verdict matches)")
			}
			re, err := regexp.Compile(c.PassIf)
			if err != nil {
				return nil, b.doc.ErrAt(here+".pass_if", "must be a regular expression the passing verdict matches: %v", err)
			}
			g.LLM, g.Model, g.Instructions, g.PassIf = c.LLM, m, c.Instructions, re
		default:
			return nil, b.doc.ErrAt(here+".kind", "unknown kind %q (regex, max_length or llm_judge)", c.Kind)
		}
		out = append(out, g)
	}
	return out, nil
}

// configIndex maps an agent's offer error to the entry of agent.yaml it came from: the
// fsm counts agent tools apart from the tools they are listed among.
func (b builder) configIndex(c config.Agent, oe *fsm.OfferError) int {
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
