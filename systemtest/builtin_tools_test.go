package systemtest

import (
	"context"
	"fmt"
	"github.com/turnlog/turnlog/cli"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
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
      workspace_scope: shared
`

// TestBuiltinToolsInATurn: an agent lists the built-in file tools; they work in the
// app's workspace, under its policy, which refuses secrets and paths outside before
// the sandbox is even asked (the sandbox refuses them too: adapters/tools/workspacetools tests).
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
	bad := strings.Replace(strings.Replace(coderConfig, "WORKSPACE", ws, 1), "    policy:\n      mode: workspace-write\n      workspace: "+ws+"\n      workspace_scope: shared\n", "", 1)
	os.WriteFile(cfg, []byte(bad), 0o644)
	if _, _, err := runCLI(t, "run", "--config", cfg, "--app", "coder", "--db", db, "hi"); err == nil || !strings.Contains(err.Error(), "need a policy") {
		t.Fatalf("built-in tools without a policy: %v", err)
	}
}

// TestApprovedCommandRunsInTheSandbox: a command the policy holds for approval shows
// its risk level and rule; once approved it runs in the sandbox (it can delete inside
// the workspace, and nothing outside).
func TestApprovedCommandRunsInTheSandbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "build"), 0o755)
	os.WriteFile(filepath.Join(ws, "build", "out.bin"), []byte("x"), 0o644)
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(strings.Replace(coderConfig, "WORKSPACE", ws, 1)), turnlog.Options{Functions: cli.DefaultWiring().Functions})
	if err != nil {
		t.Fatal(err)
	}
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	e, err := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: turnlog.NewULIDs()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := e.CreateSession(ctx, "coder", "dev", nil)
	res, err := e.RunTurn(ctx, s.ID, "run rm -rf build")
	if err != nil || res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	in := res.Interrupts[0]
	if in.Level != "L4" || in.Rule != "default:workspace-write:L4" || strings.Join(in.Resources, ",") != "delete build" {
		t.Fatalf("interrupt: %+v", in)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err != nil {
		t.Fatal("the command ran before approval")
	}
	yes := true
	st, err := e.Resume(ctx, s.ID, "reviewer", map[string]fsm.Answer{in.ID: {Confirmed: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	done, err := st.Wait()
	if err != nil || done.Status != fsm.StatusCompleted || !strings.HasPrefix(done.Output, "exit 0") {
		t.Fatalf("approved: %+v %v", done, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err == nil {
		t.Fatal("the approved command did not run")
	}
	audit, err := store.Audit(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var trail []string
	for _, a := range audit {
		line := a.Kind + " " + a.Tool + " " + a.Outcome
		if a.Rule != "" {
			line += " " + a.Rule
		}
		if a.ExitCode != nil {
			line += fmt.Sprintf(" exit %d", *a.ExitCode)
		}
		if a.By != "" {
			line += fmt.Sprintf(" by %s %s→%s", a.By, a.Proposed, a.Approved)
		}
		trail = append(trail, line)
	}
	if got, want := strings.Join(trail, " | "), `decision bash require_approval L4 default:workspace-write:L4 | approval bash approved default:workspace-write:L4 by reviewer {"command":"rm -rf build"}→{"command":"rm -rf build"} | result bash ok exit 0 | files bash 2 paths changed`; got != want {
		t.Fatalf("audit: %s\nwant   %s", got, want)
	}
}

// TestWorkspacePerUser: by default each user of an app has a workspace of their own
// under the app's root: what alice's agent writes, bob's agent cannot read — not with
// the file tools, not with a command.
func TestWorkspacePerUser(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := strings.Replace(strings.Replace(coderConfig, "WORKSPACE", root, 1), "      workspace_scope: shared\n", "", 1)
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(cfg), turnlog.Options{Functions: cli.DefaultWiring().Functions})
	if err != nil {
		t.Fatal(err)
	}
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	e, err := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: turnlog.NewULIDs()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	turn := func(user, input string) string {
		s, _ := e.CreateSession(ctx, "coder", user, nil)
		res, err := e.RunTurn(ctx, s.ID, input)
		if err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("%s: %s: %+v %v", user, input, res, err)
		}
		return res.Output
	}
	if out := turn("alice", "write plans.txt merger"); !strings.Contains(out, "wrote plans.txt") {
		t.Fatalf("alice: %s", out)
	}
	if raw, err := os.ReadFile(filepath.Join(root, "users", "alice", "plans.txt")); err != nil || string(raw) != "merger" {
		t.Fatalf("alice's workspace: %q %v", raw, err)
	}
	for _, input := range []string{"read plans.txt", "run cat plans.txt ../alice/plans.txt " + filepath.Join(root, "users/alice/plans.txt") + "; ls -R .. /"} {
		out := turn("bob", input)
		if strings.Contains(out, "merger") || strings.Contains(out, "plans.txt\n") {
			t.Fatalf("bob's agent saw alice's file (%s): %s", input, out)
		}
	}
	if out := turn("alice", "read plans.txt"); !strings.Contains(out, "merger") {
		t.Fatalf("alice's next session lost her workspace: %s", out)
	}
}

const editorConfig = `
apps:
  editor:
    start_agent: editor
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*", output: '"error"'}
            reply: "refused: {{output.error.message}}"
          - when: {after_tool: read_file}
            reply: "read {{output.path}}"
          - when: {after_tool: edit_file}
            reply: "edited {{output.path}}"
          - when: {input: '^read (\S+)'}
            tools: [{name: read_file, arguments: '{"path": "{{match.1}}"}'}]
          - when: {input: '^edit (\S+) (\w+) (\w+)'}
            tools: [{name: edit_file, arguments: '{"path": "{{match.1}}", "old_string": "{{match.2}}", "new_string": "{{match.3}}"}'}]
          - reply: hello
    TOOLS
    agents:
      editor: {llm: script, tools: [read_file, edit_file]}
    policy:
      mode: workspace-write
      workspace: WORKSPACE
      workspace_scope: shared
`

// TestEditFileAcrossRestarts: edit_file knows what the session read from the log, so
// an edit after a restart (every run here is a new process's worth of tools) works on
// a file read before it — and is refused, with the reason the model sees, when the
// file changed since or old_string does not match once.
func TestEditFileAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("buy milk\nbuy bread\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "todo.txt"), []byte("call mum\n"), 0o644)
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte(strings.NewReplacer("WORKSPACE", ws, "TOOLS", "").Replace(editorConfig)), 0o644)
	db := filepath.Join(dir, "t.db")
	session := ""
	turn := func(input string) string {
		args := []string{"run", "--config", cfg, "--app", "editor", "--db", db}
		if session != "" {
			args = append(args, "--session", session)
		}
		out, errOut, err := runCLI(t, append(args, input)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", input, err, errOut)
		}
		if session == "" {
			_, rest, _ := strings.Cut(errOut, "session ")
			session, _, _ = strings.Cut(rest, "\n")
		}
		return strings.TrimSpace(out)
	}
	steps := []struct{ input, want string }{
		{"read notes.txt", "read notes.txt"},
		{"read todo.txt", "read todo.txt"},
		{"edit notes.txt milk tea", "edited notes.txt"},
		{"edit notes.txt buy sell", "refused: 2 matches for old_string in notes.txt; include more context so it matches once"},
		{"edit notes.txt coffee tea", "refused: 0 matches for old_string in notes.txt; read the file again and copy the text exactly"},
		{"edit todo.txt mum dad", "refused: the file changed since it was read: todo.txt is not what this session last read or wrote; read it again"},
	}
	for i, s := range steps {
		if i == 5 {
			os.WriteFile(filepath.Join(ws, "todo.txt"), []byte("call mum today\n"), 0o644)
		}
		if got := turn(s.input); got != s.want {
			t.Fatalf("%s: got %q, want %q", s.input, got, s.want)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(raw) != "buy tea\nbuy bread\n" {
		t.Fatalf("notes.txt = %q", raw)
	}
	// show_errors: false on a built-in keeps its reason from the model.
	os.WriteFile(cfg, []byte(strings.NewReplacer("WORKSPACE", ws, "TOOLS", "tools:\n      edit_file: {show_errors: false}").Replace(editorConfig)), 0o644)
	if got := turn("edit notes.txt coffee tea"); got != "refused: the tool failed" {
		t.Fatalf("show_errors: false: got %q", got)
	}
	os.WriteFile(cfg, []byte(strings.NewReplacer("WORKSPACE", ws, "TOOLS", "tools:\n      edit_file: {description: mine}").Replace(editorConfig)), 0o644)
	if _, _, err := runCLI(t, "run", "--config", cfg, "--app", "editor", "--db", db, "hi"); err == nil || !strings.Contains(err.Error(), "apps.editor.tools.edit_file.description: a built-in tool takes settings only") {
		t.Fatalf("a built-in with a description: %v", err)
	}
}
