package fsm

import (
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// toolPlan is what a model response's tool calls come to before anything runs: for
// each call (slot) one of
//
//   - derived: a handoff, a skill load, arguments that are not JSON — its output is
//     made here, nothing runs;
//   - denied: the tool policy's answer is its output;
//   - waiting: it waits for a person's approval (or was rejected: the rejection is
//     its output);
//   - recorded: its result is in the recording and is used, not run again;
//   - run: it runs now (its ToolScheduled is among pending);
//
// or the turn fails (a call cap, a loop, a call scheduled before whose result was
// never recorded and that is not idempotent — outcome unknown —, a replay-only engine
// that would have to run something). Planning writes no event and runs no tool.
type toolPlan struct {
	slots []*toolSlot
	// pending are the events to record before anything runs: the model call, the
	// verdicts, the questions, each ToolScheduled (with a failure: what the failure
	// records).
	pending []events.Event
	// recorded are the recorded results the plan uses, to record again in the order
	// they were first appended.
	recorded []events.Event
	hint     string // the loop hint the model is told after the outputs
	next     *Agent // the agent a handoff in this response hands to
}

// waiting are the questions the plan's calls wait for, in call order.
func (p *toolPlan) waiting() []*Interrupt { return waitingOf(p.slots) }

// runsAny says whether a call of the plan runs now.
func (p *toolPlan) runsAny() bool {
	for _, s := range p.slots {
		if s.run {
			return true
		}
	}
	return false
}

// planTools plans a model response's tool calls (see toolPlan), pending being what
// the response's step records already (the model call). With a failure, the plan's
// pending are what the failure records.
func (r *run) planTools(resp events.ModelResponse, pending []events.Event) (*toolPlan, *ResultError) {
	p := &toolPlan{slots: make([]*toolSlot, len(resp.ToolCalls)), pending: pending}
	ag := r.agent
	for i, c := range resp.ToolCalls {
		s := &toolSlot{call: c, tool: ag.tool(c.Name), path: r.prefix + fmt.Sprintf("%s/tool/%s", ag.Name, c.ID), args: c.Arguments}
		p.slots[i] = s
		if fail := r.planCall(p, s); fail != nil {
			return p, fail
		}
	}
	if r.e.opts.ReplayOnly {
		for _, s := range p.slots {
			if s.run && s.nested == nil && s.tool != nil {
				// The recording has no result here: that is where it diverges.
				return p, &ResultError{Code: events.CodeNondeterminism, Path: s.path, Message: fmt.Sprintf(
					"the recording has no result of tool %s (call %s) here, and a replay-only engine runs no tool", s.call.Name, s.call.ID)}
			}
		}
	}
	return p, nil
}

// planCall decides what one call comes to, adding to p what that records.
func (r *run) planCall(p *toolPlan, s *toolSlot) *ResultError {
	ag, c := r.agent, s.call
	if h := ag.handoff(c.Name); h != nil {
		r.planHandoff(p, s, h)
		return nil
	}
	if c.Name == LoadSkillTool && ag.Skills != nil && ag.Skills.Len() > 0 {
		s.derived = true // derived too: the skills were read at start
		loaded, fail := r.loadSkill(s)
		if fail != nil {
			return fail
		}
		p.pending = append(p.pending, loaded...)
		return nil
	}
	if at := ag.agentTool(c.Name); at != nil {
		s.nested, s.offer = r.app.Agents[at.Agent], at
	}
	if fail := r.countCall(p, s); fail != nil {
		return fail
	}
	if c.Invalid != "" { // not JSON: answered here, nothing is scheduled or runs
		s.derived, s.result = true, &events.ToolResulted{CallID: c.ID, Tool: c.Name}
		setToolError(s.result, ToolErrInvalidArguments, "the arguments are not valid JSON ("+c.Invalid+"); send one JSON object that fits the tool's parameters", true)
		return nil
	}
	if r.app.ToolPolicy != nil {
		if p.pending = r.decide(s, p.pending); s.result != nil {
			return nil // denied: the model gets the policy's answer, nothing runs
		}
	}
	if s.needsApproval() {
		var err error
		if p.pending, err = r.approvalGate(s, p.pending); err != nil {
			return &ResultError{Code: events.CodeCorruptLog, Message: err.Error(), Path: s.path}
		}
		if s.waiting != nil || s.result != nil {
			return nil // waits for a person, or was rejected (its output is the rejection)
		}
	}
	return r.planRun(p, s)
}

// planHandoff: the response's first handoff hands the conversation over (after its
// step); a later one in the same response is told it was ignored.
func (r *run) planHandoff(p *toolPlan, s *toolSlot, h *Handoff) {
	ag, c := r.agent, s.call
	s.derived, s.result = true, &events.ToolResulted{CallID: c.ID, Tool: c.Name}
	if p.next != nil {
		s.result.Output = ignoredHandoffOutput(p.next.Name)
		return
	}
	p.next = r.app.Agents[h.Agent]
	s.result.Output = handoffOutput(p.next.Name)
	p.pending = append(p.pending, events.MustNew(r.turn, r.prefix+fmt.Sprintf("%s/handoff/%s", ag.Name, c.ID),
		&events.HandoffOccurred{From: ag.Name, To: p.next.Name, CallID: c.ID, Tool: c.Name}))
}

// countCall counts the call against its tool's cap and the loop detector: past the
// cap, or the same call loop_limit times in a row, the turn fails; at LoopHintRepeats
// in a row the model gets a hint.
func (r *run) countCall(p *toolPlan, s *toolSlot) *ResultError {
	ag, c := r.agent, s.call
	r.toolCalls[c.Name]++
	limit := ag.MaxToolCalls
	if s.tool != nil && s.tool.Spec().MaxCalls > 0 {
		limit = s.tool.Spec().MaxCalls
	}
	if r.toolCalls[c.Name] > limit {
		return &ResultError{Code: events.CodeToolCallCap, Path: s.path, Message: fmt.Sprintf("tool %s was called more than %d times in one turn", c.Name, limit)}
	}
	if key := c.Name + "\x00" + string(c.Arguments); key == r.loopKey {
		r.loopCount++
	} else {
		r.loopKey, r.loopCount = key, 1
	}
	switch {
	case r.loopCount >= ag.LoopFail:
		p.pending = append(p.pending, events.MustNew(r.turn, s.path+"/loop", &events.LoopDetected{Tool: c.Name, Repeats: r.loopCount, Action: "fail"}))
		return &ResultError{Code: events.CodeLoopDetected, Path: s.path, Message: fmt.Sprintf("tool %s was called with the same arguments %d times in a row", c.Name, r.loopCount)}
	case r.loopCount == LoopHintRepeats:
		p.pending = append(p.pending, events.MustNew(r.turn, s.path+"/loop", &events.LoopDetected{Tool: c.Name, Repeats: r.loopCount, Action: "hint"}))
		p.hint = fmt.Sprintf(LoopHint, c.Name, r.loopCount)
	}
	return nil
}

// planRun schedules a call that may run: recorded (its result is in the recording:
// used, and its ToolScheduled recorded again as it was), outcome unknown (scheduled
// before, no result, not idempotent: the turn fails rather than act twice), or run.
func (r *run) planRun(p *toolPlan, s *toolSlot) *ResultError {
	c := s.call
	// An agent tool is driven again after a crash: its own activities are recorded
	// under its path, so nothing it did is repeated.
	idempotent := s.nested != nil || (s.tool != nil && s.tool.Spec().Idempotent)
	nestedName := ""
	if s.nested != nil {
		nestedName = s.nested.Name
	}
	sched := events.MustNew(r.turn, s.path, &events.ToolScheduled{CallID: c.ID, Tool: c.Name, Arguments: s.args, Idempotent: idempotent, Agent: nestedName})
	// An agent tool is never taken from its recorded result: it is driven again, and
	// its own activities replay under its path.
	if tr, ev, found, fail := replayed[*events.ToolResulted](r, events.TypeToolResulted, s.path, ""); found && s.nested == nil {
		if fail != nil {
			return fail
		}
		s.result = tr
		p.recorded = append(p.recorded, ev)
		if files, ok := r.rec.get(events.TypeFilesChanged, FilesPath(s.path)); ok {
			p.recorded = append(p.recorded, files) // what the call did to its files, recorded with it
		}
		if recSched, ok := r.rec.get(events.TypeToolScheduled, s.path); ok {
			sched = recSched
		}
		p.pending = append(p.pending, sched)
		return nil
	}
	if recSched, ok := r.rec.get(events.TypeToolScheduled, s.path); ok && !idempotent {
		p.pending = append(p.pending, recSched) // logged already, or (a replay) logged again as it was
		return &ResultError{Code: events.CodeToolOutcomeUnknown, Path: s.path, Message: fmt.Sprintf(
			"tool %s (call %s) was scheduled but its result was never recorded; it is not idempotent, so it is not run again", c.Name, c.ID)}
	}
	s.run = true
	p.pending = append(p.pending, sched)
	return nil
}
