package fsm

import (
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// DefaultReviewRejection is the failure message of a turn whose held response a
// reviewer rejected without notes.
const DefaultReviewRejection = "a reviewer rejected the model response"

// policyTrip records a block rule's match and fails the turn. The reason names the
// rule and its pattern, never the matched text.
func (r *run) policyTrip(d *decision, at string, pending []events.Event) (*Result, error) {
	path := at + "/policy/" + d.rule.Name
	why := fmt.Sprintf("the %s matches %s", targetNoun(d.target), d.rule.Pattern)
	tripped := events.MustNew(r.turn, path, &events.GuardrailTripped{Name: d.rule.Name, Kind: "policy", Stage: d.target, Reason: why})
	return r.fail(events.CodePolicyDenied, fmt.Sprintf("guardrail policy rule %s blocked the turn: %s", d.rule.Name, why), path, append(pending, tripped)...)
}

func targetNoun(target string) string {
	switch target {
	case TargetModelInput:
		return "input"
	case TargetModelOutput:
		return "model's text"
	case TargetToolInput:
		return "tool call arguments"
	}
	return "tool output"
}

// inputGate applies the policy's block rules to the turn's recorded input.
func (r *run) inputGate(input string) (*Result, error) {
	d, err := r.app.GuardrailPolicy.decide(TargetModelInput, []string{input}, nil)
	if err != nil || d == nil {
		return nil, err
	}
	return r.policyTrip(d, r.agent.Name+"/input", nil)
}

// responseGate applies the policy's block and review rules to a model response at
// path (recorded or new). A block fails the turn. A review holds the response until a
// person answers: approve releases it as recorded (the provider is not called again),
// reject fails the turn. While it is held, the approvals its tool calls need are asked
// too, so one answer covers them all. A nil result lets the turn go on.
func (r *run) responseGate(resp events.ModelResponse, path string, pending []events.Event) (*Result, []events.Event, error) {
	p := r.app.GuardrailPolicy
	if p == nil {
		return nil, pending, nil
	}
	d, err := p.decide(TargetModelOutput, []string{resp.Text}, nil)
	if err == nil && (d == nil || d.rule.Action != PolicyBlock) {
		var td *decision
		td, err = p.decide(TargetToolInput, nil, argumentsOf(resp.ToolCalls))
		if td != nil && (d == nil || td.rule.Action == PolicyBlock) {
			d = td
		}
	}
	if err != nil {
		res, err := r.fail(events.CodeCorruptLog, err.Error(), path, pending...)
		return res, nil, err
	}
	switch {
	case d == nil:
		return nil, pending, nil
	case d.rule.Action == PolicyBlock:
		res, err := r.policyTrip(d, path, pending)
		return res, nil, err
	}
	rpath := path + "/review"
	if ev, ok := r.logged.get(events.TypeReviewResolved, rpath); ok {
		ans, err := events.DecodeAs[*events.ReviewResolved](ev)
		if err != nil {
			res, err := r.fail(events.CodeCorruptLog, err.Error(), rpath, pending...)
			return res, nil, err
		}
		if ans.Decision == events.DecisionApprove {
			return nil, pending, nil
		}
		msg := DefaultReviewRejection
		if ans.ReviewerNotes != "" {
			msg += ": " + ans.ReviewerNotes
		}
		res, err := r.fail(events.CodePolicyDenied, fmt.Sprintf("guardrail policy rule %s held the response; %s", d.rule.Name, msg), rpath, pending...)
		return res, nil, err
	}
	held := events.MustMarshal(resp)
	review := &Interrupt{ID: interruptID(r.turn, rpath), Kind: events.InterruptGuardrailReview, Path: rpath, Arguments: held, Rule: d.rule.Name,
		Reason: fmt.Sprintf("guardrail policy rule %s holds this model response for review: the %s matches %s", d.rule.Name, targetNoun(d.target), d.rule.Pattern)}
	if !r.logged.has(events.TypeReviewRequested, rpath) {
		pending = append(pending, events.MustNew(r.turn, rpath, &events.ReviewRequested{InterruptID: review.ID,
			Kind: events.InterruptGuardrailReview, Rule: d.rule.Name, Reason: review.Reason, Response: resp}))
	}
	waiting := []*Interrupt{review}
	for _, c := range resp.ToolCalls {
		t := r.agent.tool(c.Name)
		if t == nil || !t.Spec().NeedsApproval {
			continue
		}
		s := &toolSlot{call: c, tool: t, path: r.prefix + fmt.Sprintf("%s/tool/%s", r.agent.Name, c.ID), args: c.Arguments}
		asked, err := r.approvalGate(s, pending)
		if err != nil {
			res, err := r.fail(events.CodeCorruptLog, err.Error(), s.path, pending...)
			return res, nil, err
		}
		if s.waiting != nil { // an answered call is dealt with once the response is released
			pending, waiting = asked, append(waiting, s.waiting)
		}
	}
	res, err := r.suspend(waiting, pending...)
	return res, nil, err
}

func argumentsOf(calls []events.ToolCall) []json.RawMessage {
	docs := make([]json.RawMessage, len(calls))
	for i, c := range calls {
		docs[i] = c.Arguments
	}
	return docs
}

// outputGate applies the policy's block rules to the tools' recorded outputs, in call
// order, before any of them reaches the model.
func (r *run) outputGate(slots []*toolSlot) (*Result, error) {
	for _, s := range slots {
		if s.result == nil {
			continue
		}
		texts, docs := []string{s.result.Detail}, []json.RawMessage{json.RawMessage(s.result.Output)}
		if !json.Valid(docs[0]) { // an agent tool answers in plain text
			texts, docs = append(texts, s.result.Output), nil
		}
		d, err := r.app.GuardrailPolicy.decide(TargetToolOutput, texts, docs)
		if err != nil {
			return r.fail(events.CodeCorruptLog, err.Error(), s.path)
		}
		if d != nil {
			return r.policyTrip(d, s.path, nil)
		}
	}
	return nil, nil
}
