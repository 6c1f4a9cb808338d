package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const coderConfig = `
apps:
  coder:
    start_agent: coder
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: read_file, output: '"error"'}
            reply: "refused: {{output.error.message}}"
          - when: {after_tool: read_file}
            reply: "{{output.content}}"
          - when: {after_tool: bash, output: '"error"'}
            reply: "refused: {{output.error.message}}"
          - when: {after_tool: bash}
            reply: "exit {{output.exit_code}}: {{output.stdout}}"
          - when: {input: '^run (.+)'}
            tools: [{name: bash, arguments: '{"command": "{{match.1}}"}'}]
          - when: {after_tool: write_file}
            reply: "wrote {{output.path}} ({{output.bytes}} bytes)"
          - when: {input: '^read (\S+)'}
            tools: [{name: read_file, arguments: '{"path": "{{match.1}}"}'}]
          - when: {input: '^write (\S+) (\w+)'}
            tools: [{name: write_file, arguments: '{"path": "{{match.1}}", "content": "{{match.2}}"}'}]
    agents:
      coder: {llm: script, tools: [read_file, write_file, grep, bash]}
    policy:
      mode: workspace-write
      workspace: WORKSPACE
`

// TestBuiltinToolsInATurn: an agent lists the built-in file tools; they work in the
// app's workspace, under its policy, which refuses secrets and paths outside before
// the sandbox is even asked (the sandbox refuses them too: adapters/workspace tests).
func TestBuiltinToolsInATurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("buy milk\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("KEY=1\n"), 0o644)
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte(strings.Replace(coderConfig, "WORKSPACE", ws, 1)), 0o644)
	db := filepath.Join(dir, "t.db")
	for input, want := range map[string]string{
		"read notes.txt":        "1\tbuy milk",
		"write todo.txt hello":  "wrote todo.txt (5 bytes)",
		"read .env":             "refused: the tool policy denied this call (rule default-deny): read_file read .env: denied by default",
		"read ../agent.yaml":    "refused: the tool policy denied this call (rule default-deny): read_file read ../agent.yaml: outside the workspace",
		"run ls":                "exit 0: notes.txt",
		"run cat ../agent.yaml": "refused: the tool policy denied this call (rule default-deny): cat read ../agent.yaml: outside the workspace",
	} {
		out, errOut, err := runCLI(t, "run", "--config", cfg, "--app", "coder", "--db", db, input)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("%s: %v\n%s%s", input, err, out, errOut)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "todo.txt")); string(raw) != "hello" {
		t.Fatalf("todo.txt: %q", raw)
	}
	bad := strings.Replace(strings.Replace(coderConfig, "WORKSPACE", ws, 1), "    policy:\n      mode: workspace-write\n      workspace: "+ws+"\n", "", 1)
	os.WriteFile(cfg, []byte(bad), 0o644)
	if _, _, err := runCLI(t, "run", "--config", cfg, "--app", "coder", "--db", db, "hi"); err == nil || !strings.Contains(err.Error(), "need a policy") {
		t.Fatalf("built-in tools without a policy: %v", err)
	}
}
