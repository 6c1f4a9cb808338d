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
)

// Guardrail checks an agent's input or final answer.
type Guardrail struct {
	Name    string
	Kind    string
	Pattern *regexp.Regexp // regex
	Max     int            // max_length
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
		path := fmt.Sprintf("%s/guardrail/%s/%s", r.agent.Name, stage, g.Name)
		if why := g.check(text); why != "" {
			tripped := events.MustNew(r.turn, path, &events.GuardrailTripped{Name: g.Name, Kind: g.Kind, Stage: stage, Reason: why})
			res, err := r.fail(events.CodePolicyDenied, fmt.Sprintf("%s guardrail %s tripped: %s", stage, g.Name, why), path, append(pending, tripped)...)
			return nil, res, err
		}
		pending = append(pending, events.MustNew(r.turn, path, &events.GuardrailChecked{Name: g.Name, Kind: g.Kind, Stage: stage}))
	}
	return pending, nil, nil
}
