package fsm

import (
	"encoding/json"
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
	// files is what the tool changed in its workspace (RecordFiles).
	files *callFiles
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

// toolStep carries out a model response's tool calls: it plans them (planTools),
// records the plan — the model call and every ToolScheduled durable before any tool
// runs —, runs the calls that need it concurrently, each result appended as it comes
// (runSlots), and folds the outputs into the conversation in call order (foldTools).
// A non-nil result ends the turn.
func (r *run) toolStep(resp events.ModelResponse, pending []events.Event) (*Result, error) {
	p, fail := r.planTools(resp, pending)
	if fail != nil {
		return r.fail(fail.Code, fail.Message, fail.Path, p.pending...)
	}
	if waiting := p.waiting(); len(waiting) > 0 && !p.runsAny() && len(p.recorded) == 0 {
		return r.suspend(waiting, p.pending...) // nothing runs first: one commit holds it all
	}
	if err := r.emit(p.pending...); err != nil {
		return nil, err
	}
	// Recorded results go back in the order they were first appended (completion order).
	sort.Slice(p.recorded, func(i, j int) bool { return p.recorded[i].Seq < p.recorded[j].Seq })
	if err := r.emit(p.recorded...); err != nil {
		return nil, err
	}
	if err := r.runSlots(p.slots); err != nil {
		return nil, err
	}
	return r.foldTools(resp, p)
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
	case ToolErrBranchFiles:
		return "this branch's workspace files could not be made as they were at its branch point; the call did not run"
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
