package evals

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/turnlog/turnlog/events"
)

// failure is why a run fails the check ("": it passes). A judged check is judged
// apart (see judge).
func (ch Check) failure(re interface{ MatchString(string) bool }, o outcome) string {
	shown := fmt.Sprintf("%q", events.ShortenForMessage(o.answer, 200))
	switch {
	case ch.Contains != "" && !strings.Contains(o.answer, ch.Contains):
		return fmt.Sprintf("contains %q: the answer %s does not", ch.Contains, shown)
	case ch.NotContains != "" && strings.Contains(o.answer, ch.NotContains):
		return fmt.Sprintf("not_contains %q: the answer %s does", ch.NotContains, shown)
	case ch.Matches != "" && !re.MatchString(o.answer):
		return fmt.Sprintf("matches %q: the answer %s does not", ch.Matches, shown)
	case ch.ToolCalled != nil:
		for _, c := range o.calls {
			if c.name == ch.ToolCalled.Name && matchesPattern(c.args, ch.ToolCalled.Arguments) {
				return ""
			}
		}
		return fmt.Sprintf("tool_called %s%s: no such call ran (ran: %s)", ch.ToolCalled.Name, patternText(ch.ToolCalled.Arguments), callsText(o.calls))
	case ch.ToolNotCalled != "":
		for _, c := range o.calls {
			if c.name == ch.ToolNotCalled {
				return fmt.Sprintf("tool_not_called %s: it ran with %s", ch.ToolNotCalled, c.args)
			}
		}
	case ch.NoGuardrailTripped && len(o.tripped) > 0:
		return fmt.Sprintf("no_guardrail_tripped: %s tripped", strings.Join(o.tripped, ", "))
	case ch.MaxTokens > 0 && o.usage.InputTokens+o.usage.OutputTokens > ch.MaxTokens:
		return fmt.Sprintf("max_tokens %d: the run spent %d", ch.MaxTokens, o.usage.InputTokens+o.usage.OutputTokens)
	case ch.MaxCost > 0 && o.cost > ch.MaxCost:
		return fmt.Sprintf("max_cost %g: the run cost %g", ch.MaxCost, o.cost)
	case ch.Completed && !o.completed:
		return "completed: a turn did not complete"
	case len(ch.FilesChanged) > 0:
		return filesFailure(ch.FilesChanged, o.changed)
	}
	return ""
}

// filesFailure says which globs match no changed path ("": each matches one).
func filesFailure(globs, changed []string) string {
	var missing []string
	for _, g := range globs {
		found := false
		for _, p := range changed {
			if ok, _ := doublestar.Match(workspaceGlob(g), p); ok {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, g)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	shown := "none"
	if len(changed) > 0 {
		shown = strings.Join(changed, ", ")
	}
	return fmt.Sprintf("files_changed %s: no changed file matches (changed: %s)", strings.Join(missing, ", "), shown)
}

// matchesPattern says whether JSON arguments hold every key of pattern with the
// same value (an object in the pattern matches as a pattern of its own).
func matchesPattern(args json.RawMessage, pattern map[string]any) bool {
	if len(pattern) == 0 {
		return true
	}
	var got map[string]any
	if json.Unmarshal(args, &got) != nil {
		return false
	}
	return subset(got, pattern)
}

func subset(got, want map[string]any) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			return false
		}
		if wm, ok := w.(map[string]any); ok {
			gm, ok := g.(map[string]any)
			if !ok || !subset(gm, wm) {
				return false
			}
			continue
		}
		if string(events.MustMarshal(normal(w))) != string(events.MustMarshal(normal(g))) {
			return false
		}
	}
	return true
}

// normal is a YAML or JSON value as JSON decodes it (numbers as float64).
func normal(v any) any {
	var out any
	if json.Unmarshal(events.MustMarshal(v), &out) != nil {
		return v
	}
	return out
}

func patternText(p map[string]any) string {
	if len(p) == 0 {
		return ""
	}
	return " " + string(events.MustMarshal(p))
}

func callsText(calls []toolCall) string {
	if len(calls) == 0 {
		return "none"
	}
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.name + " " + string(c.args)
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
