package turnlog_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// stepApp is an app of scope whose turn "step N" runs a command that leaves the
// workspace marked N: state.txt rewritten (its mode too), a directory dN with a
// file, the symlink latest pointing at it and step N-1's directory removed; "look"
// copies state.txt to seen.txt.
func stepApp(t *testing.T, scope, ws string) *turnlog.Turnlog {
	t.Helper()
	return opsAppIn(t, scope, ws, "", `          - when: {input: "^step ([0-9]+) after ([0-9]+)$"}
            tools: [{name: bash, arguments: '{"command": "echo {{match.1}} > state.txt && chmod 6{{match.1}}0 state.txt && mkdir -p d{{match.1}}/empty && echo {{match.1}} > d{{match.1}}/f && ln -sfn d{{match.1}} latest && rm -rf d{{match.2}}"}'}]
          - when: {input: "^look$"}
            tools: [{name: bash, arguments: '{"command": "cp state.txt seen.txt"}'}]
`, "", "bash")
}

// steps runs turns step 1 … step n of session and returns their ids.
func steps(t *testing.T, tl *turnlog.Turnlog, session string, from, n int) []string {
	t.Helper()
	var ids []string
	for i := from; i <= n; i++ {
		ids = append(ids, completeTurn(t, tl, session, fmt.Sprintf("step %d after %d", i, i-1)))
	}
	return ids
}

func without(m map[string]string, keys ...string) map[string]string {
	m = maps.Clone(m)
	for _, k := range keys {
		delete(m, k)
	}
	return m
}

// TestABranchHasItsTurnsFiles: with a workspace per session, a branch at turn 2 of
// 5 finds at its first call — a real command — the files exactly as turn 2 left
// them (content, modes, times, a symlink, an empty directory, a removed one back),
// while its source keeps turn 5's; making the branch touched no file. A branch of
// that branch at its own first turn has them too, and one with files "keep" has the
// source's as they are.
func TestABranchHasItsTurnsFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tl := stepApp(t, "session", root)
	ctx := context.Background()
	s, err := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(root, "sessions", s.ID)
	ids := steps(t, tl, s.ID, 1, 2)
	atTwo := tree(t, own)
	ids = append(ids, steps(t, tl, s.ID, 3, 5)...)
	atFive := tree(t, own)
	if maps.Equal(atTwo, atFive) || atFive["state.txt"] == "" {
		t.Fatalf("the steps changed nothing: %v", atFive)
	}

	br, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: ids[1]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	branchDir := filepath.Join(root, "sessions", br.ID)
	if _, err := os.Lstat(branchDir); !os.IsNotExist(err) {
		t.Fatalf("making the branch made its workspace: %v", err)
	}
	completeTurn(t, tl, br.ID, "look")
	got := tree(t, branchDir)
	if !strings.HasSuffix(got["seen.txt"], " 2\n") {
		t.Fatalf("the branch's command read state.txt as %q", got["seen.txt"])
	}
	if got, want := without(got, "seen.txt"), atTwo; !maps.Equal(got, want) {
		t.Fatalf("the branch's files are not turn 2's:\n got %v\nwant %v", got, want)
	}
	if now := tree(t, own); !maps.Equal(now, atFive) {
		t.Fatalf("the source's files moved: %v, want %v", now, atFive)
	}

	// A branch of the branch, at the branch's turn: turn 2's files and seen.txt.
	bt, err := tl.Store.Turns(ctx, br.ID)
	if err != nil || len(bt) != 1 {
		t.Fatalf("%v %v", bt, err)
	}
	withSeen := tree(t, branchDir)
	completeTurn(t, tl, br.ID, "step 6 after 2") // the branch moves on
	deeper, err := tl.Engine.Branch(ctx, br.ID, "alice", fsm.BranchPoint{Turn: bt[0].ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	completeTurn(t, tl, deeper.ID, "look")
	if got := tree(t, filepath.Join(root, "sessions", deeper.ID)); !maps.Equal(without(got, "seen.txt"), without(withSeen, "seen.txt")) || !strings.HasSuffix(got["seen.txt"], " 2\n") {
		t.Fatalf("the branch of the branch has %v, want %v", got, withSeen)
	}

	kept, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: ids[1], Files: fsm.BranchFilesKeep}, nil)
	if err != nil {
		t.Fatal(err)
	}
	completeTurn(t, tl, kept.ID, "look")
	if got := tree(t, filepath.Join(root, "sessions", kept.ID)); !maps.Equal(without(got, "seen.txt"), atFive) {
		t.Fatalf("files keep: %v, want %v", got, atFive)
	}
	if _, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: ids[1], Files: "copy"}, nil); !events.IsCode(err, events.CodeInvalid) {
		t.Fatalf("files copy: %v", err)
	}
}

// TestABranchWhoseFilesCannotBeMadeSaysWhich: when the source changed a path after
// the branch point beyond what can be put back (a file past the undo log's cap), the branch's calls fail with
// branch_files naming it, and run nothing.
func TestABranchWhoseFilesCannotBeMadeSaysWhich(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tl := opsAppIn(t, "session", root, "", `          - when: {input: "^big$"}
            tools: [{name: bash, arguments: '{"command": "yes abcdefgh | head -c 17000000 > big.bin"}'}]
          - when: {input: "^grow$"}
            tools: [{name: bash, arguments: '{"command": "echo more >> big.bin"}'}]
          - when: {input: "^look$"}
            tools: [{name: bash, arguments: '{"command": "echo looked > seen.txt"}'}]
`, "", "bash")
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	first := completeTurn(t, tl, s.ID, "big") // made: revertible (nothing was there)
	completeTurn(t, tl, s.ID, "grow")         // its 17 MB before is past the cap
	br, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: first}, nil)
	if err != nil {
		t.Fatal(err)
	}
	completeTurn(t, tl, br.ID, "look")
	evs, err := tl.Store.Events(ctx, br.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := events.DecodeAs[*events.ToolResulted](lastOf(evs, events.TypeToolResulted))
	if err != nil {
		t.Fatal(err)
	}
	if tr.ErrorKind != fsm.ToolErrBranchFiles || !strings.Contains(tr.Output, "big.bin") {
		src, _ := tl.Store.Events(ctx, s.ID, 0)
		for _, ev := range src {
			if ev.Type == events.TypeFilesChanged {
				t.Logf("%s", ev.Data)
			}
		}
		t.Fatalf("the branch's call: %+v", tr)
	}
	if _, err := os.Lstat(filepath.Join(root, "sessions", br.ID)); !os.IsNotExist(err) {
		t.Fatalf("the branch's workspace was made: %v", err)
	}
}

// TestABranchInASharedWorkspaceRevertsOnlyWhenAsked: where sessions share their
// files, a branch keeps them by default; files "restore" reverts the source's
// turns after the point (a revert in the source's log, named by the branch), its
// conflicts refuse the branch, and under the shared scope it is refused unless the
// app allows it.
func TestABranchInASharedWorkspaceRevertsOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tl := stepApp(t, "user", root)
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	own := filepath.Join(root, "users", "alice")
	ids := steps(t, tl, s.ID, 1, 1)
	atOne := tree(t, own)
	ids = append(ids, steps(t, tl, s.ID, 2, 3)...)
	atThree := tree(t, own)

	if _, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: ids[0]}, nil); err != nil {
		t.Fatal(err)
	}
	if now := tree(t, own); !maps.Equal(now, atThree) {
		t.Fatalf("a branch with files kept moved them: %v", now)
	}
	if _, err := tl.Engine.Branch(ctx, s.ID, "bob", fsm.BranchPoint{Turn: ids[0], Files: fsm.BranchFilesRestore}, nil); !events.IsCode(err, events.CodeInvalid) {
		t.Fatalf("bob's branch restoring alice's files: %v", err)
	}

	os.WriteFile(filepath.Join(own, "state.txt"), []byte("someone else\n"), 0o600)
	if _, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: ids[0], Files: fsm.BranchFilesRestore}, nil); !events.IsCode(err, events.CodeRevertConflict) {
		t.Fatalf("a branch over a changed path: %v", err)
	}
	os.WriteFile(filepath.Join(own, "state.txt"), []byte("3\n"), 0) // as turn 3 left it (its mode kept): no conflict

	br, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: ids[0], Files: fsm.BranchFilesRestore}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if now := tree(t, own); !maps.Equal(now, atOne) {
		t.Fatalf("files restore left %v, want %v", now, atOne)
	}
	first, err := tl.Store.Events(ctx, br.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := events.DecodeAs[*events.SessionBranched](first[0])
	if err != nil || sb.Revert == "" || sb.Files != fsm.BranchFilesRestore {
		t.Fatalf("%+v %v", sb, err)
	}
	srcEvs, _ := tl.Store.Events(ctx, s.ID, 0)
	rev, err := fsm.RevertedOf(lastOf(srcEvs, events.TypeWorkspaceReverted))
	if err != nil || rev.ID != sb.Revert || len(rev.Turns) != 2 {
		t.Fatalf("the source's revert: %+v %v", rev, err)
	}

	shared := stepApp(t, "shared", t.TempDir())
	s2, _ := shared.Engine.CreateSession(ctx, "ops", "alice", nil)
	two := steps(t, shared, s2.ID, 1, 2)
	if _, err := shared.Engine.Branch(ctx, s2.ID, "alice", fsm.BranchPoint{Turn: two[0], Files: fsm.BranchFilesRestore}, nil); !events.IsCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "shared_branch_restore") {
		t.Fatalf("restore in a shared workspace: %v", err)
	}
}
