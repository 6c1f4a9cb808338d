package evals

import (
	"cmp"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/goccy/go-yaml"
	"github.com/turnlog/turnlog/events"
)

// Suite is an eval suite: the config and app its cases run on, and the cases.
type Suite struct {
	// Config is the agent.yaml, relative to the suite's folder ("": the demo's).
	Config string `yaml:"config"`
	App    string `yaml:"app"`
	// Runs is how many times each case runs unless it says (default 1); Parallel how
	// many runs go at once (default 4).
	Runs     int    `yaml:"runs"`
	Parallel int    `yaml:"parallel"`
	Cases    []Case `yaml:"cases"`
	// Workspace is a folder (relative to the suite) whose files every run's
	// workspace starts with: each run has a workspace of its own, made under a
	// temporary root ("": each starts empty).
	Workspace string `yaml:"workspace"`
	// Name is the suite's name in reports (default: its file's base name); Dir the
	// folder its relative paths start from.
	Name string `yaml:"name"`
	Dir  string `yaml:"-"`
}

// Case is one task: its inputs (a turn each), the approvals to give when a turn
// asks, and the checks every run must pass.
type Case struct {
	Name   string   `yaml:"name"`
	Input  string   `yaml:"input"`
	Inputs []string `yaml:"inputs"`
	Runs   int      `yaml:"runs"`
	// PassRate is the share of runs that must pass (default 1: all).
	PassRate *float64         `yaml:"pass_rate"`
	Approve  []Answer         `yaml:"approve"`
	Expect   []Check          `yaml:"expect"`
	regexps  []*regexp.Regexp // by check: matches, or a judge's pass_if
}

// Answer is an approval to give when a turn asks about a tool: yes or no.
type Answer struct {
	Tool   string `yaml:"tool" json:"tool"`
	Answer string `yaml:"answer" json:"answer"`
}

// Check is one expectation of a case's run; exactly one field is set.
type Check struct {
	Contains           string     `yaml:"contains"`
	NotContains        string     `yaml:"not_contains"`
	Matches            string     `yaml:"matches"`
	ToolCalled         *ToolCheck `yaml:"tool_called"`
	ToolNotCalled      string     `yaml:"tool_not_called"`
	NoGuardrailTripped bool       `yaml:"no_guardrail_tripped"`
	MaxTokens          int64      `yaml:"max_tokens"`
	MaxCost            float64    `yaml:"max_cost"`
	Completed          bool       `yaml:"completed"`
	// FilesChanged are globs (doublestar, workspace-relative) each of which must
	// match a file the run changed (made, rewrote or removed), by the undo log.
	FilesChanged []string `yaml:"files_changed"`
	// Judge is a judged check: an llm of the app reads the inputs and the answer and
	// says whether the answer meets the rubric.
	Judge *JudgeCheck `yaml:"judge"`
}

// JudgeCheck is a check an llm judges: its rubric, which of the app's llms judges
// (default: the start agent's), and the verdict that passes (a regular expression;
// default: an answer that begins with PASS).
type JudgeCheck struct {
	Rubric string `yaml:"rubric"`
	LLM    string `yaml:"llm"`
	PassIf string `yaml:"pass_if"`
}

// DefaultPassIf is the verdict a judged check passes with unless it says.
const DefaultPassIf = `(?i)^\W*pass\b`

// ToolCheck is a tool the run must have called: its name, and a JSON pattern its
// arguments match (every key the pattern gives, with the same value; nested
// objects alike).
type ToolCheck struct {
	Name      string         `yaml:"name"`
	Arguments map[string]any `yaml:"arguments"`
}

// ReadSuite reads and checks a suite file.
func ReadSuite(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read suite: %w", err)
	}
	s, err := DecodeSuite(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.Dir = filepath.Dir(path)
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return s, nil
}

// DecodeSuite decodes a suite strictly (unknown keys are errors) and checks it:
// errors name the case and the check.
func DecodeSuite(data []byte) (*Suite, error) {
	var s Suite
	if err := yaml.UnmarshalWithOptions(data, &s, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		return nil, events.FieldError(events.CodeInvalid, "suite", "%s", yaml.FormatError(err, false, false))
	}
	if s.Runs <= 0 {
		s.Runs = 1
	}
	if s.Parallel <= 0 {
		s.Parallel = 4
	}
	if s.App == "" {
		return nil, events.FieldError(events.CodeInvalid, "app", "is required: the app the cases run on")
	}
	if len(s.Cases) == 0 {
		return nil, events.FieldError(events.CodeInvalid, "cases", "a suite needs at least one case")
	}
	seen := map[string]bool{}
	for i := range s.Cases {
		c := &s.Cases[i]
		at := fmt.Sprintf("cases[%d]", i)
		switch {
		case c.Name == "":
			return nil, events.FieldError(events.CodeInvalid, at+".name", "is required")
		case seen[c.Name]:
			return nil, events.FieldError(events.CodeInvalid, at+".name", "%q names another case too", c.Name)
		case c.Input != "" && len(c.Inputs) > 0:
			return nil, events.FieldError(events.CodeInvalid, at+".inputs", "goes without input")
		case c.Input == "" && len(c.Inputs) == 0:
			return nil, events.FieldError(events.CodeInvalid, at+".input", "is required (or inputs, one a turn)")
		case c.PassRate != nil && (*c.PassRate <= 0 || *c.PassRate > 1):
			return nil, events.FieldError(events.CodeInvalid, at+".pass_rate", "must be above 0 and at most 1")
		}
		seen[c.Name] = true
		if c.Input != "" {
			c.Inputs = []string{c.Input}
		}
		if c.Runs <= 0 {
			c.Runs = s.Runs
		}
		for j, a := range c.Approve {
			if a.Tool == "" || (a.Answer != "yes" && a.Answer != "no") {
				return nil, events.FieldError(events.CodeInvalid, fmt.Sprintf("%s.approve[%d]", at, j), "takes a tool and an answer, yes or no")
			}
		}
		for j, ch := range c.Expect {
			if err := checkShape(ch, fmt.Sprintf("%s.expect[%d]", at, j)); err != nil {
				return nil, err
			}
		}
		if err := c.compile(at); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// compile compiles the case's regular expressions (a check's matches, a judge's
// pass_if); errors name the check at at.
func (c *Case) compile(at string) error {
	c.regexps = make([]*regexp.Regexp, len(c.Expect))
	for j, ch := range c.Expect {
		expr, field := ch.Matches, "matches"
		if ch.Judge != nil {
			expr, field = cmp.Or(ch.Judge.PassIf, DefaultPassIf), "judge.pass_if"
		}
		if expr == "" {
			continue
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return events.FieldError(events.CodeInvalid, fmt.Sprintf("%s.expect[%d].%s", at, j, field), "%v", err)
		}
		c.regexps[j] = re
	}
	return nil
}

// checkShape refuses a check that sets no expectation or several.
func checkShape(c Check, at string) error {
	n := 0
	for _, set := range []bool{c.Contains != "", c.NotContains != "", c.Matches != "", c.ToolCalled != nil, c.ToolNotCalled != "",
		c.NoGuardrailTripped, c.MaxTokens > 0, c.MaxCost > 0, c.Completed, c.FilesChanged != nil, c.Judge != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return events.FieldError(events.CodeInvalid, at, "sets no expectation (contains, not_contains, matches, tool_called, tool_not_called, no_guardrail_tripped, max_tokens, max_cost, completed, files_changed, judge)")
	case n > 1:
		return events.FieldError(events.CodeInvalid, at, "sets %d expectations: one a check", n)
	case c.ToolCalled != nil && c.ToolCalled.Name == "":
		return events.FieldError(events.CodeInvalid, at+".tool_called.name", "is required")
	case c.FilesChanged != nil && len(c.FilesChanged) == 0:
		return events.FieldError(events.CodeInvalid, at+".files_changed", "names no path: give globs, each matching a file the run changes")
	case c.Judge != nil && strings.TrimSpace(c.Judge.Rubric) == "":
		return events.FieldError(events.CodeInvalid, at+".judge.rubric", "is required: what the judge holds the answer to")
	}
	for i, g := range c.FilesChanged {
		if g == "" || !doublestar.ValidatePattern(g) || path.IsAbs(g) || !filepath.IsLocal(filepath.FromSlash(workspaceGlob(g))) {
			return events.FieldError(events.CodeInvalid, fmt.Sprintf("%s.files_changed[%d]", at, i), "%q is not a glob of paths within the workspace", g)
		}
	}
	return nil
}

// workspaceGlob is a files_changed glob as the undo log's paths are written: clean
// ("./a" is "a"), and a folder ending in "/" stands for everything in it.
func workspaceGlob(g string) string {
	if strings.HasSuffix(g, "/") {
		return path.Clean(g) + "/**"
	}
	return path.Clean(g)
}

// prepare fills what a case built in code lacks (its inputs, runs, compiled
// expressions), as decoding does.
func (c *Case) prepare(at string, runs int) error {
	if c.Input != "" && len(c.Inputs) == 0 {
		c.Inputs = []string{c.Input}
	}
	if c.Runs <= 0 {
		c.Runs = max(runs, 1)
	}
	if len(c.regexps) == len(c.Expect) {
		return nil
	}
	for j, ch := range c.Expect {
		if err := checkShape(ch, fmt.Sprintf("%s.expect[%d]", at, j)); err != nil {
			return err
		}
	}
	return c.compile(at)
}
