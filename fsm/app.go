package fsm

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/skills"
)

// Defaults for an agent's limits.
const (
	DefaultMaxTurns     = 10 // model calls per turn
	DefaultMaxToolCalls = 25 // calls of one tool per turn
	LoopHintRepeats     = 3  // same tool, same arguments, this many times in a row → a hint
	DefaultLoopFail     = 5  // ... this many times in a row → the turn fails
)

// App is a named agent graph.
type App struct {
	Name       string
	StartAgent string
	Agents     map[string]*Agent
	// GuardrailPolicy is the project-wide guardrail policy (agent.yaml's
	// guardrail_policy), applied to the text of every model and tool call of every
	// agent: redact, block or review (nil: none).
	GuardrailPolicy *GuardrailPolicy
	// ToolPolicy decides which tool calls may run (agent.yaml's policy): rules and
	// the sandbox mode's defaults (nil: every call runs, and no built-in tool).
	ToolPolicy *policy.Engine
	// Policy is the old name of GuardrailPolicy, used when GuardrailPolicy is nil.
	//
	// Deprecated: set GuardrailPolicy.
	Policy *GuardrailPolicy
	// Access is the old name of ToolPolicy, used when ToolPolicy is nil.
	//
	// Deprecated: set ToolPolicy.
	Access *policy.Engine
	// OnBusy is what input arriving while a turn runs or waits does by default:
	// OnBusyReject ("" too), OnBusyEnqueue or OnBusyInterrupt.
	OnBusy string
	// Retention, when positive, is how long a session may stay idle (no event)
	// before EraseIdle erases it, with its branches once they are idle too.
	Retention time.Duration
	// Workspace is the app's workspace files, which Revert puts back (nil: the app
	// has none, and nothing to revert).
	Workspace Workspace
	// SharedBranchRestore lets a branch ask for files "restore" in a workspace
	// every session of the app shares (see BranchPoint.Files).
	SharedBranchRestore bool
	// UndoCaps bound what the undo log keeps of a turn's and a session's file
	// contents (zero: DefaultUndoCaps; a negative cap: none).
	UndoCaps UndoCaps
	// Budgets bound what the app's model calls spend (nil: none); Prices are what
	// each llm's tokens cost, by llm id (a budget's cost counts with them);
	// BudgetZone is the time zone of a user_day (nil: UTC).
	Budgets *Budgets
	Prices  map[string]Price
	// Models are the app's llms by id, whichever agent uses them (an eval suite's
	// judge calls one; nil: only the agents' own).
	Models     map[string]Model
	BudgetZone *time.Location
	// BudgetExtendBy is who may extend its budgets: ExtendByOwner ("" too) or
	// ExtendByOperator. Anyone who may answer may stop a turn.
	BudgetExtendBy string

	budgeted    bool // a budget applies to some agent (set by Validate)
	budgetsRead bool // ... one of a session or a user day, which a run reads the store for
	dayBudgets  bool // ... one of a user day
	dayWindow   atomic.Pointer[dayWindow]
}

// Agent is one agent of an app with its model, tools and limits.
type Agent struct {
	Name         string
	Instructions string
	LLM          string
	Model        Model
	Tools        []Tool
	Settings     json.RawMessage // canonical per-call settings
	MaxTurns     int
	MaxToolCalls int
	LoopFail     int
	// InputGuardrails run before the first model call; OutputGuardrails see the final
	// answer before it is released (an agent with output guardrails does not stream).
	// A turn runs the input guardrails of the agent that starts it and the output
	// guardrails of the agent that gives the final answer.
	InputGuardrails, OutputGuardrails []Guardrail
	// Handoffs are the agents this one may hand the conversation to.
	Handoffs []Handoff
	// AgentTools are agents this one may call as tools.
	AgentTools []AgentTool
	// Context, when set, has every request built by the context manager within its
	// window (layers, trimming, tool output normalisation, compaction); nil sends the
	// whole conversation.
	Context *contextmgr.Config
	// SummaryModel (registered as SummaryLLM) writes compaction summaries; nil: the
	// agent's own model.
	SummaryModel Model
	SummaryLLM   string
	// Skills are the skills the agent may load: their index joins the instructions,
	// and the load_skill tool gives a body when the model asks for it.
	Skills *skills.Set
	// RequireEvidence, when set, sends an answer given in a turn in which no tool ran
	// back to the model once (see EvidenceRule).
	RequireEvidence *EvidenceRule
	// Budgets bound what this agent's own model calls spend (nil: none; the app's
	// apply as well).
	Budgets *Budgets
	// ModelName is its llm's model as the provider names it: it picks the encoding a
	// budget check counts tokens with ("": LLM).
	ModelName string

	// specs are the tools the model is offered: the agent's tools, then its handoffs.
	specs []ToolSpec

	// hashes of the request parts that never change for this agent, set by Validate
	// (toolHashes: each tool's, by name).
	toolsHash, settingsHash string
	toolHashes              map[string]string
	// outputCap is the most output a call may produce, as a budget check takes it
	// (0: not computed; the agent is under no budget).
	outputCap int64

	// faces are what its requests carry in each request shape (see requestShape):
	// [0] the instructions alone, [1] with the tool policy's permissions section (nil
	// in an app without a tool policy).
	faces [2]*agentFace
}

// agentFace is what an agent's requests carry in one request shape: the
// instructions (the agent's, then the skill index, then in the newer shape the
// permissions section), their hash, and the context manager that counts them.
type agentFace struct {
	rules, instructionsHash string
	ctxm                    *contextmgr.Manager
	// counter counts a request's tokens for a budget check when there is no context
	// manager (nil: no budget applies, or ctxm counts); fixedTokens is what the
	// instructions and tool schemas cost.
	counter     *contextmgr.Counter
	fixedTokens int64
}

// face is what the agent's requests carry in a turn of this request shape.
func (ag *Agent) face(shape int) *agentFace {
	if shape > 0 && shape < len(ag.faces) && ag.faces[shape] != nil {
		return ag.faces[shape]
	}
	return ag.faces[0]
}

// Validate checks an app's wiring and fills limit defaults.
func (a *App) Validate() error {
	if a.Name == "" {
		return fmt.Errorf("app: name is empty")
	}
	if _, ok := a.Agents[a.StartAgent]; !ok {
		return fmt.Errorf("app %s: start agent %q is not defined", a.Name, a.StartAgent)
	}
	if a.GuardrailPolicy == nil {
		a.GuardrailPolicy = a.Policy
	}
	if a.ToolPolicy == nil {
		a.ToolPolicy = a.Access
	}
	a.Policy, a.Access = a.GuardrailPolicy, a.ToolPolicy // code reading the old names reads the same
	if a.GuardrailPolicy != nil {
		if err := a.GuardrailPolicy.Validate(); err != nil {
			return fmt.Errorf("app %s: %w", a.Name, err)
		}
	}
	a.budgeted, a.budgetsRead, a.dayBudgets = a.hasBudgets()
	for name, ag := range a.Agents {
		if ag.Name != name {
			return fmt.Errorf("app %s: agent %q is listed as %q", a.Name, ag.Name, name)
		}
		if ag.Model == nil {
			return fmt.Errorf("app %s: agent %s has no model", a.Name, name)
		}
		seen := map[string]bool{}
		for _, t := range ag.Tools {
			n := t.Spec().Name
			if seen[n] {
				return fmt.Errorf("app %s: agent %s lists tool %s twice", a.Name, name, n)
			}
			seen[n] = true
		}
		if ag.MaxTurns <= 0 {
			ag.MaxTurns = DefaultMaxTurns
		}
		if ag.MaxToolCalls <= 0 {
			ag.MaxToolCalls = DefaultMaxToolCalls
		}
		if ag.LoopFail <= LoopHintRepeats {
			ag.LoopFail = DefaultLoopFail
		}
		if len(ag.Settings) == 0 {
			ag.Settings = json.RawMessage(`{}`)
		}
		names := map[string]string{}
		for _, t := range ag.Tools {
			names[t.Spec().Name] = "tool " + t.Spec().Name
		}
		if err := validateAgentTools(a, ag, names); err != nil {
			return fmt.Errorf("app %s: %w", a.Name, err)
		}
		if err := validateHandoffs(a, ag, names); err != nil {
			return fmt.Errorf("app %s: %w", a.Name, err)
		}
		rules := ag.Instructions
		if ag.Skills != nil && ag.Skills.Len() > 0 {
			if names[LoadSkillTool] != "" {
				return fmt.Errorf("app %s: agent %s: tool %s is reserved for skills", a.Name, name, LoadSkillTool)
			}
			rules = strings.TrimSpace(ag.Instructions + "\n\n" + ag.Skills.Index())
		}
		ag.specs = specsOf(ag.Tools)
		for _, t := range ag.AgentTools {
			ag.specs = append(ag.specs, t.spec())
		}
		for _, h := range ag.Handoffs {
			ag.specs = append(ag.specs, h.spec())
		}
		if ag.Skills != nil && ag.Skills.Len() > 0 {
			ag.specs = append(ag.specs, loadSkillSpec(ag.Skills))
		}
		specs, err := events.Marshal(ag.specs)
		if err != nil {
			return fmt.Errorf("app %s: agent %s: tool schemas: %w", a.Name, name, err)
		}
		ag.toolsHash, ag.settingsHash, ag.toolHashes = hashOf(specs), hashOf(ag.Settings), toolHashesOf(ag.specs)
		ag.faces[0] = &agentFace{rules: rules, instructionsHash: hashOf([]byte(rules))}
		if ag.Context != nil {
			if ag.faces[0].ctxm, err = contextmgr.New(*ag.Context, ag.LLM, rules, specs); err != nil {
				return fmt.Errorf("app %s: agent %s: context.%w", a.Name, name, err)
			}
		}
		if a.ToolPolicy != nil {
			perms := a.ToolPolicy.Permissions(name)
			// The section is no part of the request's hash: a turn driven again under a
			// changed tool policy (resumed, recovered, replayed) is told the rules of
			// now, as its calls are decided under them.
			f := &agentFace{rules: strings.TrimSpace(rules + "\n\n" + perms), instructionsHash: ag.faces[0].instructionsHash}
			if ag.Context != nil {
				if f.ctxm, err = ag.faces[0].ctxm.WithPermissions(perms); err != nil {
					return fmt.Errorf("app %s: agent %s: context.%w", a.Name, name, err)
				}
			}
			ag.faces[RequestShapePermissions] = f
		}
		if err := a.countForBudgets(ag, specs); err != nil {
			return fmt.Errorf("app %s: agent %s: %w", a.Name, name, err)
		}
	}
	return nil
}

// RequestShapePermissions is the request shape of turns whose requests carry the
// tool policy's permissions section after the instructions (TurnStarted's
// request_shape): every turn started in an app with a tool policy. A turn started
// before keeps the shape it was recorded with (0: without it), so it replays as it ran.
const RequestShapePermissions = 1

// requestShape is the request shape a turn of app starts with.
func requestShape(app *App) int {
	if app.ToolPolicy != nil {
		return RequestShapePermissions
	}
	return 0
}

func (ag *Agent) tool(name string) Tool {
	for _, t := range ag.Tools {
		if t.Spec().Name == name {
			return t
		}
	}
	return nil
}
