package policy

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// tableCase is one line of testdata/commands.tsv.
type tableCase struct {
	line           int
	mode           Mode
	want           Decision
	class, command string
}

// readTable reads testdata/commands.tsv.
func readTable(tb testing.TB) []tableCase {
	tb.Helper()
	var out []tableCase
	for _, r := range tsvRows(tb, "testdata/commands.tsv") {
		out = append(out, tableCase{line: r.line, mode: Mode(r.cols[0]), want: Decision(r.cols[1]), class: r.cols[2], command: r.cols[3]})
	}
	return out
}

// tsvRow is a line of a test table: its number and its four tab-separated columns.
type tsvRow struct {
	line int
	cols []string
}

// tsvRows reads a test table's lines, skipping blank ones and # comments; each has
// four columns, the last of which may hold tabs.
func tsvRows(tb testing.TB, path string) []tsvRow {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []tsvRow
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cols := strings.SplitN(text, "\t", 4)
		if len(cols) != 4 {
			tb.Fatalf("%s line %d: want 4 tab-separated columns: %q", path, line, text)
		}
		out = append(out, tsvRow{line, cols})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// TestCommandTable runs the hand-written cases of testdata/commands.tsv — mode,
// expected decision, the attack class it stands for, command — through Engine.Shell,
// the code path of `turnlog policy check`.
func TestCommandTable(t *testing.T) {
	t.Parallel()
	cases := readTable(t)
	for _, c := range cases {
		e := &Engine{Mode: c.mode, Workspace: "/work/repo"}
		if v := e.Shell(Subject{Agent: "a", Tool: "bash"}, c.command); v.Decision != c.want {
			t.Errorf("line %d (%s, %s): %s → %s (%s, %s), want %s", c.line, c.mode, c.class, c.command, v.Decision, v.Level, v.Reason, c.want)
		}
	}
	if len(cases) < 700 {
		t.Fatalf("only %d cases", len(cases))
	}
}

// BenchmarkPolicyDecision: one decision on a command of 20 words (a pipeline, a
// list, a wrapper, a substitution), p50 over b.N (the target is at most 100 µs), and
// the whole tables of testdata/commands.tsv and testdata/adversarial.tsv (every line
// in each of the five modes) decided once (at most 2 s).
func BenchmarkPolicyDecision(b *testing.B) {
	const command = `cd src && timeout 60 go test -run TestX ./... 2>&1 | tee out.log | grep -v "^ok" | head -n 40 > $(mktemp)`
	if n := len(strings.Fields(command)); n < 20 {
		b.Fatalf("the command has %d words", n)
	}
	e := &Engine{Mode: ModeWorkspaceWrite, Workspace: "/work/repo"}
	took := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		e.Shell(Subject{Agent: "a", Tool: "bash"}, command)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-us")
	cases, attacks := readTable(b), readAdversarial(b)
	start := time.Now()
	for _, c := range cases {
		(&Engine{Mode: c.mode, Workspace: "/work/repo"}).Shell(Subject{Agent: "a", Tool: "bash"}, c.command)
	}
	for _, c := range attacks {
		for _, m := range Modes {
			(&Engine{Mode: m, Workspace: "/work/repo", Rules: adversarialRules[c.rules]}).Shell(Subject{Agent: "a", Tool: "bash"}, c.command)
		}
	}
	b.ReportMetric(time.Since(start).Seconds(), "table-s")
	b.ReportMetric(float64(len(cases)+len(attacks)*len(Modes)), "table-cases")
}
