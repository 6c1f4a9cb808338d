package turnlog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

const oneAgent = `apps:
  a:
    start_agent: helper
    llms:
      m: {provider: scripted, rules: [{reply: hi}]}
    agents:
      helper:
        llm: m
        EXTRA
`

// TestContextMemorySkillsConfig: an agent's context window, memory and skills load,
// and each bad entry is refused naming its field.
func TestContextMemorySkillsConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "skills", "one"), 0o755)
	os.WriteFile(filepath.Join(dir, "skills", "one", "SKILL.md"), []byte("---\nname: one\ndescription: the first\n---\nbody\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "bad", "two"), 0o755)
	os.WriteFile(filepath.Join(dir, "bad", "two", "SKILL.md"), []byte("---\nname: two\ndescription: x\nwhen: never\n---\n"), 0o644)
	build := func(extra string) string { return strings.Replace(oneAgent, "EXTRA", extra, 1) }
	good := build("context: {window: 8000, budgets: {rules: 10, goal: 15, tools: 15, files: 40, trace: 10, summary: 10}}\n        memory: true\n        skills: [skills]")
	apps, err := turnlogtest.LoadApps(t, filepath.Join(dir, "agent.yaml"), []byte(good), turnlog.Options{Functions: functions()})
	if err != nil {
		t.Fatal(err)
	}
	ag := apps[0].Agents["helper"]
	var tools []string
	for _, tl := range ag.Tools {
		tools = append(tools, tl.Spec().Name)
	}
	if ag.Context == nil || ag.Context.Window != 8000 || strings.Join(tools, ",") != "memory_save,memory_search" || ag.Skills == nil || ag.Skills.Len() != 1 {
		t.Fatalf("agent: %+v tools %v", ag, tools)
	}
	for bad, want := range map[string]string{
		"context: {window: 0}":                          "apps.a.agents.helper.context.window: must be at least 1, got 0",
		"context: {window: 100, budgets: {rules: 100}}": "apps.a.agents.helper.context.budgets: give every layer its share",
		"context: {window: 100, budgets: {rules: 50, goal: 50, tools: 10, files: 0, trace: 0, summary: 0}}": "context.budgets: the shares add up to 110%",
		"context: {window: 100, budgets: {style: 100}}":                                                     "context.budgets.style: is not one of rules, goal, tools, files, trace, summary",
		"context: {window: 100, encoding: p50k_base}":                                                       "context.encoding",
		"context: {window: 100, summarizer: nope}":                                                          "context.summarizer: names no registered llm",
		"context: {window: 100, keep_user_messages: 9}":                                                     "context.keep_user_messages: must be at most 3, got 9",
		"memory: {embeddings: {base_url: 'http://x'}}":                                                      "apps.a.agents.helper.memory.embeddings.model: is required",
		"memory: {embeddings: {model: e, timeout: soon}}":                                                   "memory.embeddings.timeout: must be a positive duration",
		"skills: [missing]": "apps.a.agents.helper.skills: skills root",
		"skills: [bad]":     "bad/two/SKILL.md:4",
	} {
		if _, err := turnlogtest.LoadApps(t, filepath.Join(dir, "agent.yaml"), []byte(build(bad)), turnlog.Options{Functions: functions()}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
}
