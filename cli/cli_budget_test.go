package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestResumeAnswersABudget: a turn held at its budget exits 5 naming the budget and
// how to answer; show prints the question with its figures; resume extends it
// (extend:FIELD=N) and the turn answers, or stops it (stop) and the turn ends
// canceled; an answer of another kind is refused, naming the question.
func TestResumeAnswersABudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(cfg, []byte(`apps:
  shop:
    start_agent: support
    budgets:
      turn: {output_tokens: 25}
    llms:
      m:
        provider: scripted
        rules:
          - when: {after_tool: lookup_order}
            reply: "Order {{output.order_id}} is {{output.status}}."
          - when: {input: 'order (\d+)'}
            tools: [{name: lookup_order, arguments: '{"order_id": {{match.1}}}'}]
    tools:
      lookup_order: {}
    agents:
      support: {llm: m, tools: [lookup_order], settings: {max_tokens: 25}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "turnlog.db")
	held := func(input string) (string, string) {
		t.Helper()
		_, stderr, err := runCLI(t, "run", "--db", db, "--config", cfg, "--app", "shop", input)
		m := regexp.MustCompile(`interrupt (int_[0-9a-f]+) holds a model call at a budget`).FindStringSubmatch(stderr)
		if ExitCode(err) != 5 || m == nil {
			t.Fatalf("run: exit %d\n%s", ExitCode(err), stderr)
		}
		return strings.TrimSpace(strings.TrimPrefix(strings.Split(stderr, "\n")[0], "session ")), m[1]
	}
	session, id := held("where is order 42?")
	out, _, err := runCLI(t, "show", "--db", db, "--config", cfg, session)
	if ExitCode(err) != 5 || !strings.Contains(out, "waiting: "+id+"  budget: the turn budget of the app") || !strings.Contains(out, "extend:FIELD=N") {
		t.Fatalf("show: exit %d\n%s", ExitCode(err), out)
	}
	if _, _, err := runCLI(t, "resume", "--db", db, "--config", cfg, "--answer", id+"=yes", session); err == nil || !strings.Contains(err.Error(), "is a budget") {
		t.Fatalf("a yes to a budget: %v", err)
	}
	out, stderr, err := runCLI(t, "resume", "--db", db, "--config", cfg, "--by", "ops", "--answer", id+"=extend:output_tokens=25", session)
	if err != nil || !strings.Contains(out, "Order 42 is shipped.") {
		t.Fatalf("extended: %v\n%s%s", err, out, stderr)
	}
	session, id = held("where is order 7?")
	_, stderr, err = runCLI(t, "resume", "--db", db, "--config", cfg, "--by", "ops", "--answer", id+"=stop", session)
	if ExitCode(err) != 1 || !strings.Contains(stderr, "was canceled: ops stopped the turn at its budget") {
		t.Fatalf("stopped: exit %d\n%s", ExitCode(err), stderr)
	}
}
