package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheckReportsEveryProblemWithItsLine: shape problems all at once, then the
// loader's — of every app, every agent — each FILE:LINE: PATH; a good file is ok;
// exit status 1.
func TestConfigCheckReportsEveryProblemWithItsLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shape := filepath.Join(dir, "shape.yaml")
	os.WriteFile(shape, []byte(`apps:
  shop:
    start_agent: clerk
    llms:
      m: {provider: scripted, temprature: 1, rules: [{reply: hi}]}
    agents:
      clerk:
        llm: m
        max_turns: many
    retention: soon
`), 0o644)
	refs := filepath.Join(dir, "refs.yaml")
	os.WriteFile(refs, []byte(`apps:
  a:
    start_agent: nobody
    llms: {m: {provider: scripted, rules: [{reply: hi}]}}
    agents: {x: {llm: m}, z: {llm: m, tools: [missing]}}
  b:
    start_agent: y
    llms: {m: {provider: scripted, rules: [{reply: hi}]}}
    agents: {y: {llm: gone}}
`), 0o644)
	out, _, err := runCLI(t, "config", "check", shape, refs, "examples/demo/agent.yaml")
	if ExitCode(err) != 1 {
		t.Fatalf("exit %d (%v), want 1\n%s", ExitCode(err), err, out)
	}
	want := []string{
		shape + ":5: apps.shop.llms.m.temprature: is not a known key here",
		shape + ":9: apps.shop.agents.clerk.max_turns: is a string, want an integer",
		shape + `:10: apps.shop.retention: must be a positive duration such as 30s, 10m or 1h30m, got "soon"`,
		refs + `:3: apps.a.start_agent: names no agent of this app ("nobody")`,
		refs + `:5: apps.a.agents.z.tools[0]: names no tool of this app ("missing")`,
		refs + `:9: apps.b.agents.y.llm: names no registered llm ("gone")`,
		"examples/demo/agent.yaml: ok (1 apps)",
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start %q", i+1, lines[i], w)
		}
	}
	if out, _, err := runCLI(t, "config", "check", "examples/demo/agent.yaml"); err != nil || !strings.HasSuffix(out, ": ok (1 apps)\n") {
		t.Errorf("a good file: %v %s", err, out)
	}
}

// TestConfigSchemaAndReferencePrintWhatTheRepositoryHolds.
func TestConfigSchemaAndReferencePrintWhatTheRepositoryHolds(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, "config", "schema")
	file, _ := os.ReadFile("config/agent.schema.json")
	if err != nil || !bytes.Equal([]byte(out), file) || len(file) == 0 {
		t.Errorf("config schema: %v (%d bytes, the file %d)", err, len(out), len(file))
	}
	out, _, err = runCLI(t, "config", "reference")
	doc, _ := os.ReadFile("docs/config.md")
	if err != nil || len(out) < 10000 || !strings.Contains(string(doc), "-->\n"+out+"<!--") {
		t.Errorf("config reference is not docs/config.md's reference: %v", err)
	}
	if _, _, err := runCLI(t, "config", "lint"); ExitCode(err) != 2 {
		t.Errorf("config lint: exit %d, want 2 (usage)", ExitCode(err))
	}
}
