package workspacetools_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// TestTheToolsAndBashCannotSplitARepository: a repository whose config runs a
// command, planted half through write_file and half through bash — in both orders —
// is never completed: a host git status there runs nothing.
func TestTheToolsAndBashCannotSplitARepository(t *testing.T) {
	t.Parallel()
	for _, toolFirst := range []bool{true, false} {
		b := setup(t)
		ws := openWorkspace(t, b.dir)
		access := &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: b.dir, Mechanism: testMechanism(t)}
		bash := workspacetools.Bash(workspacetools.SpecFor(ws, access), access, nil)
		marker := filepath.Join(b.outside, "planted-ran")
		config := "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = \"touch " + marker + "\"\n"
		ctx := fsm.WithCallInfo(context.Background(), fsm.CallInfo{Session: "s0"})
		var toolErrs []string
		tool := func() {
			for p, content := range map[string]string{"x/HEAD": "ref: refs/heads/main\n", "x/config": config} {
				if _, err := b.call(t, "write_file", map[string]any{"path": p, "content": content}); err != nil {
					toolErrs = append(toolErrs, err.Error())
				}
			}
		}
		var res sandbox.Result
		command := func() {
			raw, err := bash.Call(ctx, json.RawMessage(`{"command":"mkdir -p x/objects/info x/refs/heads && touch x/objects/info/packs"}`))
			if err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(raw, &res)
		}
		if toolFirst {
			tool()
			command()
		} else {
			command()
			tool()
		}
		git := exec.Command("git", "-C", filepath.Join(b.dir, "x"), "status")
		git.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(b.dir)}
		git.Run()
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("tool first %v: git on the host ran the planted config (%+v, tool errors %v)", toolFirst, res.Changes, toolErrs)
		}
		if len(toolErrs) == 0 && (res.Changes == nil || res.Changes.RefusedCount == 0) {
			t.Fatalf("tool first %v: nothing was refused: %+v", toolFirst, res.Changes)
		}
	}
}

// TestABashCallWithNoEngineSettlesAtOnce: a bash call no engine records (a tool
// called directly) keeps nothing of its apply: what it wrote is there, turnlog's
// .turnlog is not.
func TestABashCallWithNoEngineSettlesAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ws := openWorkspace(t, b.dir)
	b.write(t, "old.txt", "old")
	access := &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: b.dir, Mechanism: testMechanism(t)}
	bash := workspacetools.Bash(workspacetools.SpecFor(ws, access), access, nil)
	ctx := fsm.WithCallInfo(context.Background(), fsm.CallInfo{Session: "s0", Turn: "t0", Path: "a/tool/c1"})
	if _, err := bash.Call(ctx, json.RawMessage(`{"command":"echo new > old.txt && echo made > new.txt"}`)); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(b.dir, "old.txt")); string(raw) != "new\n" {
		t.Fatalf("old.txt: %q", raw)
	}
	if _, err := os.Lstat(filepath.Join(b.dir, ".turnlog")); err == nil {
		t.Fatal(".turnlog was left behind")
	}
}
