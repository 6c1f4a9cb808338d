package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// DefaultRejection is what the model is told when a reviewer rejects a call without
// a message of their own.
const DefaultRejection = "A reviewer rejected this tool call; it did not run."

// EditedNote is what the model is told, with the output, of a call a reviewer edited:
// what it proposed and what ran.
func EditedNote(proposed, ran json.RawMessage) string {
	return fmt.Sprintf("%s You proposed %s; it ran with %s. The output below is from the call as it ran.", events.EditedNotePrefix, proposed, ran)
}

// editedNote is the note of a call a reviewer edited: the recorded one when the call's
// result is recorded (an agent tool's nested run is driven again; a recording made
// before notes existed has none), else a new one.
func (r *run) editedNote(s *toolSlot) string {
	if tr, _, found, fail := replayed[*events.ToolResulted](r, events.TypeToolResulted, s.path, ""); found && fail == nil {
		return tr.Note
	}
	return EditedNote(s.call.Arguments, s.args)
}

// sameJSON compares two JSON texts as canonical JSON.
func sameJSON(a, b json.RawMessage) bool {
	ca, errA := events.Canonicalize(a)
	cb, errB := events.Canonicalize(b)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}

// Interrupt is a question to a person that holds a turn.
type Interrupt struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Path      string          `json:"path"`
	CallID    string          `json:"call_id,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Rule      string          `json:"rule,omitempty"` // the guardrail policy or tool policy rule that asks
	// When the tool policy asks: the call's risk level, what it acts on, and what to do
	// instead if the rule says.
	Level       string   `json:"level,omitempty"`
	Resources   []string `json:"resources,omitempty"`
	Alternative string   `json:"alternative,omitempty"`
	// Grant, when the tool policy asks, is the pattern a yes for the rest of the
	// session covers unless the answer names another (resume_map's grant: {}).
	Grant string `json:"grant,omitempty"`
}

// interruptID is derived from the turn and the activity path, so a re-driven turn
// asks the same question under the same id.
func interruptID(turn, path string) string {
	sum := sha256.Sum256([]byte(turn + "|" + path))
	return "int_" + hex.EncodeToString(sum[:10])
}

// approvalGate decides what a call that needs approval does now: wait (a question is
// asked, or was asked and is unanswered), run (approved, perhaps with edited
// arguments), or answer with the rejection. It returns pending with what to record.
func (r *run) approvalGate(s *toolSlot, pending []events.Event) ([]events.Event, error) {
	apath := s.path + "/approval"
	id := interruptID(r.turn, apath)
	// Only answers already in this log count: a replay must suspend where the
	// recording did, and only then take the answers given afterwards.
	if ev, ok := r.logged.get(events.TypeApprovalResolved, apath); ok {
		ans, err := events.DecodeAs[*events.ApprovalResolved](ev)
		if err != nil {
			return pending, err
		}
		if ans.Confirmed {
			if len(ans.Arguments) > 0 && !sameJSON(ans.Arguments, s.call.Arguments) {
				s.args, s.edited = ans.Arguments, true
			}
			return pending, nil
		}
		tr, rec, found, fail := replayed[*events.ToolResulted](r, events.TypeToolResulted, s.path, "")
		if fail != nil {
			return pending, errors.New(fail.Message)
		}
		if found {
			s.result = tr
			return append(pending, rec), nil // emit skips it where it is logged already
		}
		msg := ans.RejectionMessage
		if msg == "" {
			msg = DefaultRejection
		}
		s.result = &events.ToolResulted{CallID: s.call.ID, Tool: s.call.Name, IsError: true, ErrorKind: "rejected", Detail: msg,
			Output: string(events.MustMarshal(map[string]any{"error": map[string]string{"kind": "rejected", "message": msg}}))}
		return append(pending, events.MustNew(r.turn, s.path, s.result)), nil
	}
	s.waiting = &Interrupt{ID: id, Kind: events.InterruptToolApproval, Path: apath, CallID: s.call.ID, Tool: s.call.Name,
		Arguments: s.call.Arguments, Reason: fmt.Sprintf("tool %s needs approval before it runs", s.call.Name)}
	if v := s.verdict; v != nil && v.Decision == "require_approval" {
		s.waiting.Reason = fmt.Sprintf("the tool policy asks a person (rule %s): %s", v.Rule, v.Reason)
		s.waiting.Level, s.waiting.Rule, s.waiting.Resources, s.waiting.Alternative = v.Level, v.Rule, v.Resources, v.Alternative
		s.waiting.Grant, _ = r.e.SuggestedGrant(r.app.Name, apath, s.call.Name, s.call.Arguments)
	}
	if r.logged.has(events.TypeApprovalRequested, apath) {
		return pending, nil // asked before; still unanswered
	}
	return append(pending, events.MustNew(r.turn, apath, &events.ApprovalRequested{InterruptID: id,
		Kind: events.InterruptToolApproval, CallID: s.call.ID, Tool: s.call.Name, Arguments: s.call.Arguments,
		Reason: s.waiting.Reason, ExpiresInMS: s.expiresIn().Milliseconds(),
		Level: s.waiting.Level, Rule: s.waiting.Rule, Resources: s.waiting.Resources, Alternative: s.waiting.Alternative})), nil
}

func waitingOf(slots []*toolSlot) []*Interrupt {
	var out []*Interrupt
	for _, s := range slots {
		if s.waiting != nil {
			out = append(out, s.waiting)
		}
		if s.stop != nil {
			out = append(out, s.stop.waiting...)
		}
	}
	return out
}

// suspend pauses the turn until people answer; the calls that needed no approval have
// run and are recorded, so resuming repeats none of them.
func (r *run) suspend(waiting []*Interrupt, pending ...events.Event) (*Result, error) {
	if err := r.fire(TriggerSuspend); err != nil {
		return nil, err
	}
	if r.prefix != "" { // a nested run records its questions; its caller suspends the turn
		if err := r.emit(pending...); err != nil {
			return nil, err
		}
		res := &Result{Session: r.session, TurnID: r.turn, Status: StatusSuspended, Agent: r.agent.Name}
		for _, w := range waiting {
			res.Interrupts = append(res.Interrupts, *w)
		}
		return res, nil
	}
	ids := make([]string, len(waiting))
	interrupts := make([]Interrupt, len(waiting))
	for i, w := range waiting {
		ids[i], interrupts[i] = w.ID, *w
	}
	ev := events.MustNew(r.turn, "", &events.TurnSuspended{Interrupts: ids, Usage: r.usage})
	if err := r.emit(append(pending, ev)...); err != nil {
		return nil, err
	}
	r.ended(StatusSuspended, "", "")
	return &Result{Session: r.session, TurnID: r.turn, Status: StatusSuspended, Usage: r.usage, Agent: r.agent.Name,
		Interrupts: interrupts}, nil
}
