package fsm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
)

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
		d.s.files.seal() // a tool still running past this records nothing: it takes its changes back
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
		var ev, files events.Event
		var changed bool
		if err == nil {
			ev, err = storableResult(r.turn, d.s.path, d.tr)
		}
		if err == nil {
			files, changed, err = d.s.files.event(r.turn, d.s.path, d.s.call, func(fc *events.FilesChanged, cs []events.Content) ([]events.Content, error) {
				return r.capContents(r.ctx, fc, cs)
			})
		}
		evs := []events.Event{ev}
		if changed {
			evs = append(evs, files) // in the result's append: both durable, or neither
		}
		switch {
		case err != nil:
			d.s.recorded.fire(false)
		case d.s.nested != nil || (d.s.tool != nil && d.s.tool.Spec().Idempotent):
			for i, ev := range evs {
				hooks := d.s.recorded
				if i > 0 {
					hooks = nil
				}
				r.log.postpone(ev, hooks)
			}
		default:
			err = r.emit(evs...) // durable now: a finished side effect must never look unknown
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
	if err := r.branchFiles(r.ctx); err != nil {
		var bf *BranchFilesError
		setToolError(tr, ToolErrBranchFiles, branchFilesError(err), errors.As(err, &bf))
		return finish()
	}
	spec := s.tool.Spec()
	// The tool's context ends when a person cancels the turn: bash loses its PID
	// namespace, HTTP and MCP requests are cut, a Go function sees ctx.Done().
	ctx, stop := r.cancelContext()
	defer stop()
	ctx = WithCallInfo(ctx, CallInfo{Session: r.session, User: r.owner, Turn: r.turn, Agent: r.agent.Name, Path: s.path, Approved: s.needsApproval(),
		EarlierRuns: earlierRuns(r.rec, s.path)})
	s.recorded = &recordedHooks{}
	ctx = withRecordedHooks(ctx, s.recorded)
	s.files = &callFiles{}
	ctx = withCallFiles(ctx, s.files)
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
