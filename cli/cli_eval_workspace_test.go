package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// evalShellConfig is an app whose agent writes, edits and reads workspace files as
// its input says, with a policy workspace of its own (which an eval never uses).
const evalShellConfig = `apps:
  ops:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: done
          - when: {input: "^write"}
            tools: [{name: write_file, arguments: '{"path": "docs/new.txt", "content": "hello\n"}'}]
          - when: {input: "^edit"}
            tools: [{name: edit_file, arguments: '{"path": "notes.txt", "old_string": "one", "new_string": "ONE"}'}]
          - when: {input: "^read"}
            tools: [{name: read_file, arguments: '{"path": "notes.txt"}'}]
    agents:
      worker: {llm: script, tools: [read_file, write_file, edit_file]}
    policy:
      mode: workspace-write
      workspace: %WS%
      rules:
        - {name: files, tools: [read_file, write_file, edit_file], decision: allow}
`

// TestEvalRunsEachCaseInAWorkspaceOfItsOwn: each run of a case gets a workspace of
// its own under the eval's root, seeded from the suite's folder (named by a link; its
// own links copied, one leading out of it refused) — two runs at once both edit the
// seeded file — and files_changed checks what the undo log says the run changed
// ("./a" is "a", "docs/" all in it): a run that only reads fails it, naming what
// changed. The app's own workspace is untouched; --workspaces keeps the runs' folders.
func TestEvalRunsEachCaseInAWorkspaceOfItsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	own := filepath.Join(dir, "app-workspace")
	seed := filepath.Join(dir, "seed")
	for _, d := range []string{own, seed} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(seed, "notes.txt"), []byte("one\n"), 0o640)
	os.Symlink("notes.txt", filepath.Join(seed, "notes-link")) // a link to its own file is copied
	os.Symlink("seed", filepath.Join(dir, "seed-link"))        // the suite names the folder by a link
	os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(strings.Replace(evalShellConfig, "%WS%", own, 1)), 0o600)
	os.WriteFile(filepath.Join(dir, "suite.yaml"), []byte(`config: agent.yaml
app: ops
workspace: seed-link
runs: 2
parallel: 2
cases:
  - name: edit
    inputs: [read the notes, edit the notes]
    expect: [{files_changed: [./notes.txt]}, {tool_called: {name: edit_file}}]
  - name: write
    input: write the docs
    expect: [{files_changed: ["docs/*.txt", "docs/"]}]
  - name: read
    input: read the notes
    expect: [{files_changed: [notes.txt]}]
`), 0o600)
	kept := filepath.Join(dir, "runs")
	out, stderr, err := runCLI(t, "eval", "--db", filepath.Join(dir, "eval.db"), "--synchronous", "OFF", "--workspaces", kept, filepath.Join(dir, "suite.yaml"))
	if ExitCode(err) != 4 || !strings.Contains(out, "edit   2/2 ok") || !strings.Contains(out, "write  2/2 ok") || !strings.Contains(out, "read   0/2 FAIL") ||
		!strings.Contains(out, "files_changed notes.txt: no changed file matches (changed: none)") {
		t.Fatalf("exit %d\n%s%s", ExitCode(err), out, stderr)
	}
	if entries, _ := os.ReadDir(own); len(entries) != 0 {
		t.Fatalf("the app's own workspace was used: %v", entries)
	}
	sessions, err := os.ReadDir(filepath.Join(kept, "sessions"))
	if err != nil || len(sessions) != 6 {
		t.Fatalf("the runs' workspaces: %v, %v", sessions, err)
	}
	edited := 0
	for _, s := range sessions {
		raw, _ := os.ReadFile(filepath.Join(kept, "sessions", s.Name(), "notes.txt"))
		if string(raw) == "ONE\n" {
			edited++
		} else if string(raw) != "one\n" {
			t.Errorf("session %s's notes: %q", s.Name(), raw)
		}
	}
	if edited != 2 {
		t.Fatalf("%d workspaces edited, want the edit case's 2", edited)
	}
	if raw, _ := os.ReadFile(filepath.Join(seed, "notes.txt")); string(raw) != "one\n" {
		t.Fatalf("the suite's folder changed: %q", raw)
	}
	if target, err := os.Readlink(filepath.Join(kept, "sessions", sessions[0].Name(), "notes-link")); err != nil || target != "notes.txt" {
		t.Fatalf("the seed's link: %q %v", target, err)
	}
	// A link that leads out of the folder is not copied into a run's workspace.
	os.Symlink("../agent.yaml", filepath.Join(seed, "escape"))
	_, _, err = runCLI(t, "eval", "--db", filepath.Join(dir, "eval.db"), "--synchronous", "OFF", filepath.Join(dir, "suite.yaml"))
	if err == nil || !strings.Contains(err.Error(), "link escape points outside it (../agent.yaml)") {
		t.Fatalf("a link out of the workspace folder: %v", err)
	}
}
