package systemtest

import (
	"bytes"
	"context"
	"github.com/turnlog/turnlog/cli"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const taskConfig = `
apps:
  coder:
    start_agent: coder
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: bash}
            reply: "done: {{output.stdout}}"
          - when: {after_tool: edit_file}
            tools: [{name: bash, arguments: '{"command": "ls"}'}]
          - when: {after_tool: read_file}
            tools: [{name: edit_file, arguments: '{"path": "{{args.path}}", "old_string": "TODO", "new_string": "DONE"}'}]
          - when: {input: '^fix (\S+)'}
            tools: [{name: read_file, arguments: '{"path": "{{match.1}}"}'}]
          - when: {input: '^clean'}
            tools: [{name: bash, arguments: '{"command": "rm -rf build"}'}]
    agents:
      coder: {llm: script, tools: [read_file, edit_file, bash]}
    policy:
      mode: workspace-write
`

// TestRunAsALocalShell: `turnlog run --workspace DIR` does a small task in one turn —
// read a file, edit it, run a command, answer — printing each step as it happens; a
// command the policy holds is asked about on the terminal and runs once approved.
func TestRunAsALocalShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "build"), 0o755)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("ship it\nTODO: tests\n"), 0o644)
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte(taskConfig), 0o644)
	db := filepath.Join(dir, "t.db")
	shell := func(stdin string, args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		w := cli.DefaultWiring()
		w.Stdin = strings.NewReader(stdin)
		err := cli.RunWith(context.Background(), append([]string{"run", "--config", cfg, "--app", "coder", "--db", db, "--workspace", ws}, args...), &out, &errOut, w)
		return out.String(), errOut.String(), err
	}
	out, steps, err := shell("", "fix notes.txt")
	if err != nil || !strings.Contains(out, "done: build\nnotes.txt") {
		t.Fatalf("task: %v\n%s\n%s", err, out, steps)
	}
	for _, step := range []string{`→ read_file {"path":"notes.txt"}`, "→ edit_file", "← edit_file", `→ bash {"command":"ls"}`, `"exit_code":0`} {
		if !strings.Contains(steps, step) {
			t.Fatalf("the steps printed lack %q:\n%s", step, steps)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(raw) != "ship it\nDONE: tests\n" {
		t.Fatalf("notes.txt: %q", raw)
	}
	out, steps, err = shell("y\n", "clean")
	if err != nil || !strings.Contains(steps, "approve bash") || !strings.Contains(steps, "(L4, rule default:workspace-write:L4, delete build)") || !strings.Contains(out, "done:") {
		t.Fatalf("approved: %v\n%s\n%s", err, out, steps)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err == nil {
		t.Fatal("the approved command did not run")
	}
	os.MkdirAll(filepath.Join(ws, "build"), 0o755)
	out, steps, err = shell("n\n", "clean")
	if _, serr := os.Stat(filepath.Join(ws, "build")); serr != nil {
		t.Fatalf("a refused command ran: %v\n%s\n%s", err, out, steps)
	}
}
