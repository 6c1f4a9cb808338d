package fsm

import (
	"fmt"
	"regexp"
	"unicode/utf8"

	"github.com/turnlog/turnlog/events"
)

// Guardrail kinds.
const (
	GuardrailRegex     = "regex"      // the text matches the pattern → trip
	GuardrailMaxLength = "max_length" // the text is longer than Max runes → trip
	GuardrailLLMJudge  = "llm_judge"  // a judge model's verdict does not match PassIf → trip
)

// Guardrail checks an agent's input or final answer.
type Guardrail struct {
	Name    string
	Kind    string
	Pattern *regexp.Regexp // regex
	Max     int            // max_length
	// llm_judge: the judge model, its instructions, and the verdict that passes.
	LLM          string
	Model        Model
	Instructions string
	PassIf       *regexp.Regexp
}

// check returns why the guardrail trips on text, or "".
func (g Guardrail) check(text string) string {
	switch g.Kind {
	case GuardrailRegex:
		if g.Pattern.MatchString(text) {
			return fmt.Sprintf("the text matches %s", g.Pattern)
		}
	case GuardrailMaxLength:
		if n := utf8.RuneCountInString(text); n > g.Max {
			return fmt.Sprintf("the text is %d characters long, more than %d", n, g.Max)
		}
	}
	return ""
}

// guard runs guardrails one at a time, in order, stopping at the first trip. The
// checks are recorded with whatever else is pending; a trip fails the turn.
func (r *run) guard(stage, text string, rails []Guardrail, pending []events.Event) ([]events.Event, *Result, error) {
	for _, g := range rails {
		path := r.prefix + fmt.Sprintf("%s/guardrail/%s/%s", r.agent.Name, stage, g.Name)
		why := g.check(text)
		if g.Kind == GuardrailLLMJudge {
			verdict, called, failure := r.judge(g, path+"/model/1", text)
			pending = append(pending, called...)
			if failure != nil {
				res, err := r.fail(failure.Code, failure.Message, failure.Path, pending...)
				return nil, res, err
			}
			if !g.PassIf.MatchString(verdict) {
				why = fmt.Sprintf("the judge answered %q", verdict)
			}
		}
		if why != "" {
			tripped := events.MustNew(r.turn, path, &events.GuardrailTripped{Name: g.Name, Kind: g.Kind, Stage: stage, Reason: why})
			res, err := r.fail(events.CodePolicyDenied, fmt.Sprintf("%s guardrail %s tripped: %s", stage, g.Name, why), path, append(pending, tripped)...)
			return nil, res, err
		}
		pending = append(pending, events.MustNew(r.turn, path, &events.GuardrailChecked{Name: g.Name, Kind: g.Kind, Stage: stage}))
	}
	return pending, nil, nil
}

// judge asks a guardrail's judge model for a verdict on text. The call is an activity
// like any model call: recorded at its path, and on replay the recorded verdict is
// used (a changed request is nondeterminism).
func (r *run) judge(g Guardrail, path, text string) (string, []events.Event, *ResultError) {
	items := []events.Item{events.UserMessage(text)}
	hash := hashOf(events.MustMarshal(struct {
		LLM          string        `json:"llm"`
		Instructions string        `json:"instructions"`
		Items        []events.Item `json:"items"`
	}{g.LLM, g.Instructions, items}))
	mc, ev, found, fail := replayed[*events.ModelCalled](r, events.TypeModelCalled, path,
		fmt.Sprintf("the recording has no verdict of judge %s here, and a replay-only engine calls no model", g.Name))
	if fail != nil {
		return "", nil, fail
	}
	if found {
		if mc.RequestHash != hash {
			field, want, got := "items[0].content", "", text
			if len(mc.NewItems) > 0 {
				want = mc.NewItems[0].Content
			}
			if want == text {
				field, want, got = "instructions or llm", mc.LLM, g.LLM
			}
			nd := &NondeterminismError{Path: path, Field: field, Want: want, Got: got}
			return "", nil, r.diverged(nd)
		}
		r.usage = r.usage.Add(mc.Usage)
		r.noteSpend(events.TypeModelCalled, path, g.Name, mc.Usage, mc.Cost, mc.Day, r.logged.has(events.TypeModelCalled, path))
		return mc.Response.Text, []events.Event{ev}, nil
	}
	resp, err := g.Model.Call(r.ctx, ModelRequest{LLM: g.LLM, Agent: g.Name, Instructions: g.Instructions, Items: items})
	if err != nil {
		return "", nil, &ResultError{Code: events.CodeModelFailed, Path: path, Message: fmt.Sprintf("judge %s failed: %v", g.Name, err)}
	}
	r.usage = r.usage.Add(resp.Usage)
	cost := r.app.costOf(g.LLM, resp.Usage)
	day := r.app.recordedDay(r.e.opts.Clock())
	r.noteSpend(events.TypeModelCalled, path, g.Name, resp.Usage, cost, day, false)
	ev = events.MustNew(r.turn, path, &events.ModelCalled{Agent: g.Name, LLM: g.LLM, RequestHash: hash,
		Parts: events.RequestParts{Items: 1}, NewItems: items, Response: events.ModelResponse{Text: resp.Text}, Usage: resp.Usage,
		Cost: cost, Day: day})
	if err := events.StoreLimits.Check(ev.Data); err != nil {
		return "", nil, &ResultError{Code: events.CodeInvalidModelOutput, Path: path,
			Message: fmt.Sprintf("judge %s answered what turnlog's log cannot keep: %v", g.Name, err)}
	}
	return resp.Text, []events.Event{ev}, nil
}
