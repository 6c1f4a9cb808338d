package fsm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/policy"
)

// Tool error kinds, as the model sees them in {"error":{"kind":...,"message":...}}.
const (
	ToolErrInvalidArguments = "invalid_arguments"
	ToolErrFailed           = "failed"
	ToolErrPanicked         = "panicked"
	ToolErrTimeout          = "timeout"
	ToolErrUnknownTool      = "unknown_tool"
	ToolErrReplayOnly       = "replay_only" // a replay-only engine runs no tool
	ToolErrInvalidOutput    = "invalid_output"
	// ToolErrOutcomeUnknown: the tool may or may not have acted (a request that got no
	// answer); calling it again may act twice.
	ToolErrOutcomeUnknown = "outcome_unknown"
	// ToolErrCanceled: the turn was canceled while the tool ran, and it stopped;
	// ToolErrAbandoned: it did not stop within the grace period.
	ToolErrCanceled  = "canceled"
	ToolErrAbandoned = "abandoned"
)

// LoopHint is what the model is told when it repeats a call.
const LoopHint = "turnlog: you called %s with the same arguments %d times in a row and got the same kind of result; change the arguments or answer with what you have"

// toolSlot is one call of a model response on its way to an output.
type toolSlot struct {
	call    events.ToolCall
	tool    Tool
	path    string
	args    json.RawMessage      // what the tool runs with: the model's, or a reviewer's edit
	result  *events.ToolResulted // recorded or produced
	run     bool
	waiting *Interrupt // the call waits for a person
	derived bool       // a handoff, a skill load, arguments that are not JSON: its output is derived, nothing runs
	nested  *Agent     // an agent tool: this agent runs under the call's path
	offer   *AgentTool // ... as the caller offers it
	stop    *nestedStop
	verdict *events.PolicyDecided // what the tool policy said, when the app has one
	edited  bool                  // a reviewer changed the arguments the call runs with
	// recorded are what the tool asked to run once its result is durable (OnRecorded).
	recorded *recordedHooks
}

func (s *toolSlot) needsApproval() bool {
	if s.verdict != nil && s.verdict.Decision == string(policy.RequireApproval) {
		return true
	}
	if s.offer != nil {
		return s.offer.NeedsApproval
	}
	return s.tool != nil && s.tool.Spec().NeedsApproval
}

func (s *toolSlot) expiresIn() time.Duration {
	switch {
	case s.offer != nil:
		return s.offer.ExpiresIn
	case s.tool != nil:
		return s.tool.Spec().ExpiresIn
	}
	return 0
}

// toolStep schedules a model response's tool calls durably with the model call, runs
// the ones without a recorded result concurrently, appends each result as it comes,
// and adds outputs to the conversation in call order. A non-nil result ends the turn.
func (r *run) toolStep(resp events.ModelResponse, pending []events.Event) (*Result, error) {
	ag := r.agent
	slots := make([]*toolSlot, len(resp.ToolCalls))
	var recordedResults []events.Event
	hint := ""
	var next *Agent // the agent a handoff in this response hands to
	for i, c := range resp.ToolCalls {
		s := &toolSlot{call: c, tool: ag.tool(c.Name), path: r.prefix + fmt.Sprintf("%s/tool/%s", ag.Name, c.ID), args: c.Arguments}
		slots[i] = s
		if h := ag.handoff(c.Name); h != nil {
			s.derived, s.result = true, &events.ToolResulted{CallID: c.ID, Tool: c.Name}
			if next != nil {
				s.result.Output = ignoredHandoffOutput(next.Name)
				continue
			}
			next = r.app.Agents[h.Agent]
			s.result.Output = handoffOutput(next.Name)
			pending = append(pending, events.MustNew(r.turn, r.prefix+fmt.Sprintf("%s/handoff/%s", ag.Name, c.ID),
				&events.HandoffOccurred{From: ag.Name, To: next.Name, CallID: c.ID, Tool: c.Name}))
			continue
		}
		if c.Name == LoadSkillTool && ag.Skills != nil && ag.Skills.Len() > 0 {
			s.derived = true // derived too: the skills were read at start
			loaded, fail := r.loadSkill(s)
			if fail != nil {
				return r.fail(fail.Code, fail.Message, fail.Path, pending...)
			}
			pending = append(pending, loaded...)
			continue
		}
		if at := ag.agentTool(c.Name); at != nil {
			s.nested, s.offer = r.app.Agents[at.Agent], at
		}
		r.toolCalls[c.Name]++
		limit := ag.MaxToolCalls
		if s.tool != nil && s.tool.Spec().MaxCalls > 0 {
			limit = s.tool.Spec().MaxCalls
		}
		if r.toolCalls[c.Name] > limit {
			return r.fail(events.CodeToolCallCap, fmt.Sprintf("tool %s was called more than %d times in one turn", c.Name, limit), s.path, pending...)
		}
		if key := c.Name + "\x00" + string(c.Arguments); key == r.loopKey {
			r.loopCount++
		} else {
			r.loopKey, r.loopCount = key, 1
		}
		if c.Invalid != "" { // not JSON: answered here, nothing is scheduled or runs
			s.derived, s.result = true, &events.ToolResulted{CallID: c.ID, Tool: c.Name}
			setToolError(s.result, ToolErrInvalidArguments, "the arguments are not valid JSON ("+c.Invalid+"); send one JSON object that fits the tool's parameters", true)
		}
		switch {
		case r.loopCount >= ag.LoopFail:
			ev := events.MustNew(r.turn, s.path+"/loop", &events.LoopDetected{Tool: c.Name, Repeats: r.loopCount, Action: "fail"})
			return r.fail(events.CodeLoopDetected, fmt.Sprintf("tool %s was called with the same arguments %d times in a row", c.Name, r.loopCount), s.path, append(pending, ev)...)
		case r.loopCount == LoopHintRepeats:
			pending = append(pending, events.MustNew(r.turn, s.path+"/loop", &events.LoopDetected{Tool: c.Name, Repeats: r.loopCount, Action: "hint"}))
			hint = fmt.Sprintf(LoopHint, c.Name, r.loopCount)
		}
		if s.result != nil {
			continue // arguments that are not JSON
		}
		if r.app.ToolPolicy != nil {
			if pending = r.decide(s, pending); s.result != nil {
				continue // denied: the model gets the policy's answer, nothing runs
			}
		}
		if s.needsApproval() {
			var err error
			if pending, err = r.approvalGate(s, pending); err != nil {
				return r.fail(events.CodeCorruptLog, err.Error(), s.path, pending...)
			}
			if s.waiting != nil || s.result != nil {
				continue // waits for a person, or was rejected (its output is the rejection)
			}
		}
		// An agent tool is driven again after a crash: its own activities are recorded
		// under its path, so nothing it did is repeated.
		idempotent := s.nested != nil || (s.tool != nil && s.tool.Spec().Idempotent)
		nestedName := ""
		if s.nested != nil {
			nestedName = s.nested.Name
		}
		sched := events.MustNew(r.turn, s.path, &events.ToolScheduled{CallID: c.ID, Tool: c.Name, Arguments: s.args, Idempotent: idempotent, Agent: nestedName})
		if ev, ok := r.rec.get(events.TypeToolResulted, s.path); ok && s.nested == nil {
			tr, err := events.DecodeAs[*events.ToolResulted](ev)
			if err != nil {
				return r.fail(events.CodeCorruptLog, err.Error(), s.path, pending...)
			}
			s.result = tr
			recordedResults = append(recordedResults, ev)
			if recSched, ok := r.rec.get(events.TypeToolScheduled, s.path); ok {
				sched = recSched
			}
			pending = append(pending, sched)
			continue
		}
		if r.rec.has(events.TypeToolScheduled, s.path) && !idempotent {
			return r.fail(events.CodeToolOutcomeUnknown, fmt.Sprintf(
				"tool %s (call %s) was scheduled but its result was never recorded; it is not idempotent, so it is not run again", c.Name, c.ID), s.path, pending...)
		}
		s.run = true
		pending = append(pending, sched)
	}
	if r.e.opts.ReplayOnly {
		for _, s := range slots {
			if s.run && s.nested == nil && s.tool != nil {
				// The recording has no result here: that is where it diverges.
				return r.fail(events.CodeNondeterminism, fmt.Sprintf(
					"the recording has no result of tool %s (call %s) here, and a replay-only engine runs no tool", s.call.Name, s.call.ID), s.path, pending...)
			}
		}
	}
	waiting := waitingOf(slots)
	if len(waiting) > 0 && !anyToRun(slots) && len(recordedResults) == 0 {
		return r.suspend(waiting, pending...) // nothing runs first: one commit holds it all
	}
	// ModelCalled and every ToolScheduled are durable before any tool runs.
	if err := r.emit(pending...); err != nil {
		return nil, err
	}
	// Recorded results go back in the order they were first appended (completion order).
	sort.Slice(recordedResults, func(i, j int) bool { return recordedResults[i].Seq < recordedResults[j].Seq })
	if err := r.emit(recordedResults...); err != nil {
		return nil, err
	}
	if err := r.runSlots(slots); err != nil {
		return nil, err
	}
	for _, s := range slots {
		if s.stop != nil && s.stop.failure != nil {
			if r.stopRequested() { // the nested agent stopped because the turn was canceled
				return r.cancelTurn()
			}
			f := s.stop.failure
			return r.fail(f.Code, fmt.Sprintf("agent tool %s (call %s) failed: %s", s.call.Name, s.call.ID, f.Message), f.Path)
		}
	}
	waiting = waitingOf(slots) // with the questions nested runs wait for, in call order
	if res, err := r.outputGate(slots); res != nil || err != nil {
		return res, err
	}
	if len(waiting) > 0 {
		return r.suspend(waiting)
	}
	if resp.Text != "" {
		r.conv.append(events.AssistantMessage(ag.Name, resp.Text))
	}
	for _, s := range slots {
		r.conv.append(events.Item{Type: events.ItemFunctionCall, CallID: s.call.ID, Name: s.call.Name, Arguments: s.call.Arguments, Agent: ag.Name})
	}
	for _, s := range slots {
		r.conv.append(events.Item{Type: events.ItemFunctionCallOutput, CallID: s.call.ID, Output: s.result.ModelText()})
	}
	if hint != "" {
		r.conv.append(events.Item{Type: events.ItemMessage, Role: "system", Content: hint})
	}
	if next != nil {
		r.agent = next
	}
	return nil, nil
}

func anyToRun(slots []*toolSlot) bool {
	for _, s := range slots {
		if s.run {
			return true
		}
	}
	return false
}

// runSlots runs every slot that needs it concurrently and appends each ToolResulted
// as soon as its tool returns. A store failure is returned after all tools finish.
func (r *run) runSlots(slots []*toolSlot) error {
	type done struct {
		s     *toolSlot
		tr    *events.ToolResulted
		stop  *nestedStop
		usage events.Usage
	}
	n := 0
	for _, s := range slots {
		if s.run {
			n++
		}
	}
	ch := make(chan done, n)
	for _, s := range slots {
		if !s.run {
			continue
		}
		call := func() {
			if s.nested != nil {
				tr, stop, usage := r.runNested(s)
				ch <- done{s, tr, stop, usage}
				return
			}
			ch <- done{s: s, tr: r.execute(s)}
		}
		if n == 1 {
			call() // one tool: no goroutine to hand it to
		} else {
			go call()
		}
	}
	var firstErr error
	for ; n > 0; n-- {
		d := <-ch
		d.s.result, d.s.stop = d.tr, d.stop
		r.usage = r.usage.Add(d.usage)
		if firstErr != nil || d.stop != nil {
			d.s.recorded.fire(false) // the turn ends without this result
			continue
		}
		if d.s.edited {
			d.tr.Note = r.editedNote(d.s)
		}
		err := r.app.GuardrailPolicy.redactResult(d.tr)
		var ev events.Event
		if err == nil {
			ev, err = storableResult(r.turn, d.s.path, d.tr)
		}
		switch {
		case err != nil:
			d.s.recorded.fire(false)
		case d.s.nested != nil || (d.s.tool != nil && d.s.tool.Spec().Idempotent):
			r.log.postpone(ev, d.s.recorded)
		default:
			err = r.emit(ev) // durable now: a finished side effect must never look unknown
			d.s.recorded.fire(err == nil)
		}
		firstErr = err
	}
	return firstErr
}

// execute runs one tool with its timeout, turning every way it can fail into a tool
// error result. It never returns a platform failure.
func (r *run) execute(s *toolSlot) *events.ToolResulted {
	start := r.e.opts.Clock()
	tr := &events.ToolResulted{CallID: s.call.ID, Tool: s.call.Name}
	_, endSpan := r.traced(r.ctx, SpanStart{Operation: SpanExecuteTool, Name: s.call.Name, Path: s.path, CallID: s.call.ID})
	began := time.Now()
	finish := func() *events.ToolResulted {
		tr.DurationMS = r.e.opts.Clock().Sub(start).Milliseconds()
		r.e.opts.Observer.ToolCalled(s.call.Name, time.Since(began), tr.IsError)
		endSpan(toolSpanEnd(tr))
		return tr
	}
	if s.tool == nil {
		setToolError(tr, ToolErrUnknownTool, fmt.Sprintf("no tool named %s", s.call.Name), true)
		return finish()
	}
	if r.e.opts.ReplayOnly {
		setToolError(tr, ToolErrReplayOnly, fmt.Sprintf("the recording has no result of %s here, and a replay-only engine runs no tool", s.call.Name), true)
		return finish()
	}
	spec := s.tool.Spec()
	// The tool's context ends when a person cancels the turn: bash loses its PID
	// namespace, HTTP and MCP requests are cut, a Go function sees ctx.Done().
	ctx, stop := r.cancelContext()
	defer stop()
	ctx = WithCallInfo(ctx, CallInfo{Session: r.session, User: r.owner, Turn: r.turn, Agent: r.agent.Name, Path: s.path, Approved: s.needsApproval()})
	s.recorded = &recordedHooks{}
	ctx = withRecordedHooks(ctx, s.recorded)
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Timeout)
		defer cancel()
	}
	type outcome struct {
		out   json.RawMessage
		err   error
		panic any
	}
	ch := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- outcome{panic: p}
			}
		}()
		out, err := s.tool.Call(ctx, s.args)
		ch <- outcome{out: out, err: err}
	}()
	var o outcome
	select {
	case o = <-ch:
	case <-ctx.Done():
		if !r.canceled() {
			setToolError(tr, ToolErrTimeout, fmt.Sprintf("the tool did not finish within %s", spec.Timeout), true)
			return finish()
		}
		// Canceled: a tool that honours its context returns at once; one that does
		// not gets the grace period, then is left behind.
		grace := time.NewTimer(r.e.opts.CancelGrace)
		defer grace.Stop()
		select {
		case o = <-ch:
		case <-grace.C:
			setToolError(tr, ToolErrAbandoned, fmt.Sprintf("the turn was canceled (%s) and the tool did not stop within %s; turnlog stopped waiting for it, and it may still be running", r.cancelReason(), r.e.opts.CancelGrace), true)
			return finish()
		}
	}
	var argErr *ArgumentsError
	var toolErr *ToolError
	switch {
	case r.canceled() && (errors.Is(o.err, context.Canceled) || isCanceledToolError(o.err)):
		setToolError(tr, ToolErrCanceled, fmt.Sprintf("the turn was canceled (%s) while the tool ran; it was stopped", r.cancelReason()), true)
	case o.panic != nil:
		setToolError(tr, ToolErrPanicked, fmt.Sprint(o.panic), spec.ShowErrors)
	case errors.As(o.err, &argErr):
		setToolError(tr, ToolErrInvalidArguments, argErr.Field+": "+argErr.Message, true)
	case errors.As(o.err, &toolErr):
		kind := toolErr.Kind
		if kind == "" {
			kind = ToolErrFailed
		}
		setToolError(tr, kind, toolErr.Message, toolErr.Public || spec.ShowErrors)
	case errors.Is(o.err, context.DeadlineExceeded) && spec.Timeout > 0:
		setToolError(tr, ToolErrTimeout, fmt.Sprintf("the tool did not finish within %s", spec.Timeout), true)
	case o.err != nil:
		setToolError(tr, ToolErrFailed, o.err.Error(), spec.ShowErrors)
	default:
		if len(o.out) == 0 {
			o.out = json.RawMessage("null")
		}
		canon, err := events.Canonicalize(o.out)
		if err != nil {
			setToolError(tr, ToolErrInvalidOutput, err.Error(), true)
			break
		}
		tr.Output = outputText(canon)
	}
	return finish()
}

// isCanceledToolError: a tool's own account that it was canceled.
func isCanceledToolError(err error) bool {
	var te *ToolError
	return errors.As(err, &te) && te.Kind == ToolErrCanceled
}

// outputText is what the model reads of a canonical output: a JSON string's text as
// it is, anything else as canonical JSON.
func outputText(canon json.RawMessage) string {
	if len(canon) > 0 && canon[0] == '"' {
		var text string
		if json.Unmarshal(canon, &text) == nil {
			return text
		}
	}
	return string(canon)
}

// toolErrorText is the fixed text a model sees for a kind when the tool does not opt
// in to showing its own message; "" means the detail is always shown.
func toolErrorText(kind string) string {
	switch kind {
	case ToolErrFailed:
		return "the tool failed"
	case ToolErrPanicked:
		return "the tool crashed"
	case ToolErrOutcomeUnknown:
		return "the tool's outcome is unknown: it may have acted; do not call it again for the same purpose without checking"
	}
	return ""
}

// storableResult is tr's event, or, when tr holds what turnlog's log cannot keep
// (see events.StoreLimits), an invalid_output error the model reads instead.
func storableResult(turn, path string, tr *events.ToolResulted) (events.Event, error) {
	ev, err := events.New(turn, path, tr)
	if err != nil {
		return ev, err
	}
	if err := events.StoreLimits.Check(ev.Data); err != nil {
		setToolError(tr, ToolErrInvalidOutput, fmt.Sprintf("the tool's result cannot be kept in turnlog's log: %v", err), true)
		return events.New(turn, path, tr)
	}
	return ev, nil
}

func setToolError(tr *events.ToolResulted, kind, detail string, show bool) {
	msg := toolErrorText(kind)
	if show || msg == "" {
		msg = detail
	}
	tr.IsError, tr.ErrorKind, tr.Detail = true, kind, detail
	tr.Output = string(events.MustMarshal(map[string]any{"error": map[string]string{"kind": kind, "message": msg}}))
}
