package fsm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
)

// AgentTool offers an agent of the app to another agent as a tool. The nested agent
// gets the call's input as its user message and runs under the call's path
// (`<caller>/tool/<call id>/<agent>/...`), where its model and tool calls are
// recorded; only its final answer reaches the caller, as the call's output.
type AgentTool struct {
	Agent       string // the agent that answers
	Name        string // the tool name the caller's model sees (default: the agent's name)
	Description string // what the caller's model is told (a default names the agent)
	// NeedsApproval suspends the turn before the nested agent runs until a person
	// answers; ExpiresIn auto-rejects an approval nobody gave in time.
	NeedsApproval bool
	ExpiresIn     time.Duration
}

// AgentToolArguments are what the caller's model sends.
type AgentToolArguments struct {
	Input string `json:"input"`
}

var agentToolParameters = json.RawMessage(`{"additionalProperties":false,"properties":{"input":{"description":"What to ask the agent.","type":"string"}},"required":["input"],"type":"object"}`)

func (t AgentTool) spec() ToolSpec {
	return ToolSpec{Name: t.Name, Description: t.Description, Parameters: agentToolParameters}
}

func (ag *Agent) agentTool(name string) *AgentTool {
	for i := range ag.AgentTools {
		if ag.AgentTools[i].Name == name {
			return &ag.AgentTools[i]
		}
	}
	return nil
}

// validateAgentTools fills an agent tool's defaults and refuses unknown agents and
// names already taken by the agent's tools (names holds them, and takes these).
func validateAgentTools(a *App, ag *Agent, names map[string]string) error {
	for i := range ag.AgentTools {
		t := &ag.AgentTools[i]
		if _, ok := a.Agents[t.Agent]; !ok {
			return &OfferError{Agent: ag.Name, Field: "tools", Index: i, Msg: fmt.Sprintf("names no agent of app %s (%q)", a.Name, t.Agent)}
		}
		if t.Name == "" {
			t.Name = t.Agent
		}
		if t.Description == "" {
			t.Description = fmt.Sprintf("Ask the %s agent; it answers with its final reply.", t.Agent)
		}
		if other, ok := names[t.Name]; ok {
			return &OfferError{Agent: ag.Name, Field: "tools", Index: i, Msg: fmt.Sprintf("the agent tool %s and %s both use the name %s", t.Agent, other, t.Name)}
		}
		names[t.Name] = fmt.Sprintf("the agent tool %s", t.Agent)
	}
	return nil
}

// runNested runs an agent tool's call: a run of the nested agent under the call's
// path, sharing the turn's log and recording, that answers with its final text. A
// failure of the nested run (its limits, its model) fails the caller's turn.
func (r *run) runNested(s *toolSlot) (*events.ToolResulted, *nestedStop, events.Usage) {
	tr := &events.ToolResulted{CallID: s.call.ID, Tool: s.call.Name, Agent: s.nested.Name}
	var args AgentToolArguments
	dec := json.NewDecoder(strings.NewReader(string(s.args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil || args.Input == "" {
		setToolError(tr, ToolErrInvalidArguments, `input: a non-empty string is required (arguments are {"input": "..."})`, true)
		return tr, nil, events.Usage{}
	}
	// A call whose answer is recorded is replayed, not done again: no span for it.
	agentCtx, endTool, endAgent := r.ctx, func(SpanEnd) {}, func(SpanEnd) {}
	if _, _, done, _ := replayed[*events.ToolResulted](r, events.TypeToolResulted, s.path, ""); !done {
		var toolCtx context.Context
		toolCtx, endTool = r.traced(r.ctx, SpanStart{Operation: SpanExecuteTool, Name: s.call.Name, Path: s.path, CallID: s.call.ID})
		agentCtx, endAgent = r.traced(toolCtx, SpanStart{Operation: SpanInvokeAgent, Name: s.nested.Name, Path: s.path + "/" + s.nested.Name})
	}
	child := &run{e: r.e, ctx: agentCtx, app: r.app, agent: s.nested, session: r.session, owner: r.owner, parent: r.parent, turn: r.turn, log: r.log,
		conv: &conversation{}, rec: r.rec, logged: r.logged, m: NewMachine(StateGuardingInput),
		modelCalls: map[string]int{}, toolCalls: map[string]int{}, stopped: r.stopped, stopper: r.stopper, prefix: s.path + "/"}
	child.conv.append(events.UserMessage(args.Input))
	answer, stop := child.driveNested()
	end := nestedSpanEnd(stop)
	endAgent(end)
	endTool(end)
	if stop != nil {
		return nil, stop, child.usage
	}
	tr.Output = answer
	return tr, nil, child.usage
}

// nestedStop is why a nested run gave no answer: it failed, or it waits for people.
type nestedStop struct {
	failure *ResultError
	waiting []*Interrupt
	// atBudget: a person stopped the turn at a budget of the nested agent's: the
	// whole turn ends canceled, as at one of its own.
	atBudget bool
}

func failed(code events.Code, path, msg string) *nestedStop {
	return &nestedStop{failure: &ResultError{Code: code, Path: path, Message: msg}}
}

// driveNested is drive for an agent tool's run: model and tool steps until the
// nested agent answers. It records its activities but never ends the turn; when it
// must wait for people, its caller suspends the turn with its questions.
func (r *run) driveNested() (string, *nestedStop) {
	for {
		if r.stopRequested() {
			return "", failed(events.CodeCanceled, "", r.cancelReason())
		}
		if err := r.fire(TriggerCallModel); err != nil {
			return "", failed(events.CodeInternal, "", err.Error())
		}
		resp, called, hold, failure := r.modelStep()
		if hold != nil && hold.waiting != nil {
			res, err := r.suspend([]*Interrupt{hold.waiting}, called...)
			return "", r.nestedOutcome(res, err)
		}
		if hold != nil { // a person stopped the turn at a budget: the caller's call fails
			if err := r.emit(called...); err != nil {
				return "", failed(events.CodeInternal, "", err.Error())
			}
			stop := failed(events.CodeCanceled, "", hold.stopped)
			stop.atBudget = true
			return "", stop
		}
		if failure != nil {
			if err := r.emit(called...); err != nil {
				return "", failed(events.CodeInternal, "", err.Error())
			}
			if r.canceled() { // the model call failed because the turn was canceled
				return "", failed(events.CodeCanceled, "", r.cancelReason())
			}
			return "", &nestedStop{failure: failure}
		}
		path := r.prefix + fmt.Sprintf("%s/model/%d", r.agent.Name, r.modelCalls[r.agent.Name])
		res, called, err := r.responseGate(resp, path, called)
		if stop := r.nestedOutcome(res, err); stop != nil {
			return "", stop
		}
		if len(resp.ToolCalls) == 0 {
			ev, again := r.checkEvidence()
			if ev != nil {
				called = append(called, *ev)
			}
			if err := r.emit(called...); err != nil {
				return "", failed(events.CodeInternal, "", err.Error())
			}
			if again {
				if err := r.fire(TriggerGuardOutput); err != nil { // checked, and sent back
					return "", failed(events.CodeInternal, "", err.Error())
				}
				continue
			}
			return resp.Text, nil
		}
		if err := r.fire(TriggerRunTools); err != nil {
			return "", failed(events.CodeInternal, "", err.Error())
		}
		res, err = r.toolStep(resp, called)
		if stop := r.nestedOutcome(res, err); stop != nil {
			return "", stop
		}
	}
}

// nestedOutcome turns what would end a turn into why the nested run stops.
func (r *run) nestedOutcome(res *Result, err error) *nestedStop {
	switch {
	case err != nil:
		return failed(events.CodeInternal, "", err.Error())
	case res == nil:
		return nil
	case res.Status == StatusSuspended:
		waiting := make([]*Interrupt, len(res.Interrupts))
		for i := range res.Interrupts {
			waiting[i] = &res.Interrupts[i]
		}
		return &nestedStop{waiting: waiting}
	case res.Status == StatusCanceled && res.Error != nil: // stopped at a budget further down
		return &nestedStop{failure: res.Error, atBudget: true}
	case res.Error != nil:
		return &nestedStop{failure: res.Error}
	}
	return failed(events.CodeInternal, "", "the nested agent ended without an answer")
}

// lane is the nested run an activity path belongs to: the deepest
// "<caller>/tool/<call id>/" prefix that more follows, or "" for the turn's own agent.
// Activities of concurrent nested runs interleave in the log in no fixed order; within
// one lane the order is fixed.
func lane(path string) string {
	segs := strings.Split(path, "/")
	end := 0
	for i := 0; i+2 < len(segs); i++ {
		if segs[i] == "tool" && i > 0 {
			end = i + 2
		}
	}
	if end == 0 {
		return ""
	}
	return strings.Join(segs[:end], "/") + "/"
}
