package workspacetools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// TestUsersDoNotSeeEachOthersWorkspaces: with a workspace per user, bob's commands —
// whatever the policy would have said of them — and bob's file tools find nothing of
// alice's, who finds her file again in her next session.
func TestUsersDoNotSeeEachOthersWorkspaces(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	wss, err := workspacetools.NewWorkspaces(root, workspacetools.ScopeUser)
	if err != nil {
		t.Fatal(err)
	}
	access := &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: root, Mechanism: testMechanism(t)}
	bash := workspacetools.Bash(workspacetools.SpecFor(wss.Root(), access), access, wss)
	tools := map[string]fsm.Tool{}
	for _, tool := range workspacetools.Tools(wss, nil) {
		tools[tool.Spec().Name] = tool
	}
	as := func(user, session string) context.Context {
		return fsm.WithCallInfo(context.Background(), fsm.CallInfo{User: user, Session: session})
	}
	if _, err := tools["write_file"].Call(as("alice", "s1"), json.RawMessage(`{"path": "plans.txt", "content": "merger"}`)); err != nil {
		t.Fatal(err)
	}
	res := bashResult(t, bash, as("bob", "s2"), "cat ../alice/plans.txt "+filepath.Join(root, "users/alice/plans.txt")+"; ls -aR .. / 2>/dev/null; find / -name plans.txt 2>/dev/null; pwd")
	if strings.Contains(res.Stdout, "merger") || strings.Contains(res.Stdout, "plans.txt") || !strings.Contains(res.Stdout, filepath.Join(root, "users", "bob")) {
		t.Fatalf("bob's command: %+v", res)
	}
	if out, err := tools["read_file"].Call(as("bob", "s2"), json.RawMessage(`{"path": "plans.txt"}`)); err == nil || strings.Contains(string(out), "merger") {
		t.Fatalf("bob's read_file: %s %v", out, err)
	}
	if out, err := tools["read_file"].Call(as("alice", "s3"), json.RawMessage(`{"path": "plans.txt"}`)); err != nil || !strings.Contains(string(out), "merger") {
		t.Fatalf("alice's next session: %s %v", out, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "users", "bob")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("bob's workspace: %v %v", fi, err)
	}
	// A user id that is not a plain name cannot name another directory.
	if _, err := tools["write_file"].Call(as("../alice", "s4"), json.RawMessage(`{"path": "plans.txt", "content": "overwritten"}`)); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(root, "users", "alice", "plans.txt")); string(raw) != "merger" {
		t.Fatalf("alice's file is now %q", raw)
	}
}
