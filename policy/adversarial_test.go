package policy

import (
	"fmt"
	"strings"
	"testing"
)

// adversarialRules are the rule sets testdata/adversarial.tsv names.
var adversarialRules = map[string][]Rule{
	"-": nil,
	"coder": {
		{Name: "no-push", Decision: Deny, Commands: []string{"git push"}, Alternative: "commit locally; a person reviews and pushes"},
		{Name: "go-proxy", Decision: Allow, Actions: []Action{ActNetwork}, Domains: []string{"proxy.golang.org", "sum.golang.org"}},
		{Name: "review-deletes", Decision: RequireApproval, Actions: []Action{ActDelete}, Alternative: "move files to ./trash instead"},
	},
	"github": {{Name: "github", Decision: Allow, Actions: []Action{ActNetwork}, Domains: []string{"github.com", "*.github.com"}}},
}

// adversarialCase is one line of testdata/adversarial.tsv: a command and what each
// of the five modes decides about it.
type adversarialCase struct {
	line                  int
	class, rules, command string
	want                  [5]Decision // in the order of Modes
}

var decisionLetters = map[byte]Decision{'A': Allow, 'Q': RequireApproval, 'D': Deny}

func readAdversarial(tb testing.TB) []adversarialCase {
	tb.Helper()
	var out []adversarialCase
	for _, r := range tsvRows(tb, "testdata/adversarial.tsv") {
		line, cols := r.line, r.cols
		if len(cols[2]) != len(Modes) {
			tb.Fatalf("line %d: want class, rules, %d letters and a command: %q", line, len(Modes), strings.Join(cols, "\t"))
		}
		if _, ok := adversarialRules[cols[1]]; !ok {
			tb.Fatalf("line %d: no rule set %q", line, cols[1])
		}
		// \n in a command stands for a newline (a here-document's lines).
		c := adversarialCase{line: line, class: cols[0], rules: cols[1], command: strings.ReplaceAll(cols[3], `\n`, "\n")}
		for i := range Modes {
			d, ok := decisionLetters[cols[2][i]]
			if !ok {
				tb.Fatalf("line %d: %q is not A, Q or D", line, cols[2][i])
			}
			c.want[i] = d
		}
		out = append(out, c)
	}
	return out
}

// TestAdversarialTable decides every command of testdata/adversarial.tsv — attacks by
// class, at least 15 a class — in all five modes, under the rule set its line names.
func TestAdversarialTable(t *testing.T) {
	t.Parallel()
	cases := readAdversarial(t)
	perClass := map[string]int{}
	for _, c := range cases {
		perClass[c.class]++
		for i, m := range Modes {
			e := &Engine{Mode: m, Workspace: "/work/repo", Rules: adversarialRules[c.rules]}
			if v := e.Shell(Subject{Agent: "a", Tool: "bash"}, c.command); v.Decision != c.want[i] {
				t.Errorf("line %d (%s, %s, rules %s): %s → %s (%s: %s), want %s", c.line, c.class, m, c.rules, c.command, v.Decision, v.Rule, v.Reason, c.want[i])
			}
		}
	}
	var few []string
	for class, n := range perClass {
		if n < 15 {
			few = append(few, fmt.Sprintf("%s (%d)", class, n))
		}
	}
	if len(few) > 0 {
		t.Errorf("classes with fewer than 15 cases: %s", strings.Join(few, ", "))
	}
}
