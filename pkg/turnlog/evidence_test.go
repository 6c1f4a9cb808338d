package turnlog_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

const evidenceConfig = `apps:
  shop:
    start_agent: clerk
    llms:
      m:
        provider: scripted
        rules:
          - {when: {after_tool: "*"}, reply: "from the tool: {{output}}"}
          - {when: {input: '^look'}, tools: [{name: lookup_order, arguments: "{}"}]}
          - reply: "order 42 is shipped"
    tools:
      lookup_order: {function: ping, idempotent: true}
    agents:
      clerk:
        llm: m
        tools: [lookup_order]
        require_evidence: EVIDENCE
`

// TestRequireEvidenceFromAgentYAML: require_evidence in agent.yaml sends an answer
// without a tool call back once, lets the second stand, and counts both in the
// metrics; an answer from a tool is left alone; a tool it names must be the agent's.
func TestRequireEvidenceFromAgentYAML(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := strings.Replace(evidenceConfig, "EVIDENCE", "{tools: [lookup_order], note: Look the order up first.}", 1)
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "t.db"), ConfigData: []byte(cfg), Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	h, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k": "alice"}})
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()
	s, _ := tl.Engine.CreateSession(ctx, "shop", "alice", nil)
	if res := runTurn(t, tl, s.ID, "where is order 42?"); res.Output != "order 42 is shipped" {
		t.Fatalf("answer: %+v", res)
	}
	if res := runTurn(t, tl, s.ID, "look order 42 up"); !strings.HasPrefix(res.Output, "from the tool: ") {
		t.Fatalf("answer: %+v", res)
	}
	evs, _ := tl.Store.Events(ctx, s.ID, 0)
	var trail []string
	for _, ev := range evs {
		if ev.Type == events.TypeAnswerWithoutEvidence {
			p, _ := events.DecodeAs[*events.AnswerWithoutEvidence](ev)
			trail = append(trail, ev.Path+" "+p.Action+" "+p.Note)
		}
	}
	if strings.Join(trail, "|") != "clerk/evidence/1 sent_back Look the order up first.|clerk/evidence/2 stood " {
		t.Errorf("the checks recorded: %q", trail)
	}
	m := scrape{t: t, c: &http.Client{}, url: srv.URL}
	for _, action := range []string{"sent_back", "stood"} {
		if v := m.value("turnlog_answers_without_evidence_total", "app", "shop", "agent", "clerk", "action", action); v != 1 {
			t.Errorf("turnlog_answers_without_evidence_total{action=%q} = %v, want 1", action, v)
		}
	}
	bad := strings.Replace(evidenceConfig, "EVIDENCE", "{tools: [lookup]}", 1)
	if _, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(bad), turnlog.Options{Functions: functions()}); err == nil ||
		!strings.Contains(err.Error(), `apps.shop.agents.clerk.require_evidence.tools[0]: names no tool of this agent ("lookup")`) {
		t.Errorf("a tool the agent lacks: %v", err)
	}
}
