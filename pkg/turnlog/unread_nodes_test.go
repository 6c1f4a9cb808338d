package turnlog_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// TestARevertedPathIsUnreadOnEveryNode: two nodes on one PostgreSQL database and one
// workspace. A session reads a file on node B; on node A a command changes it and a
// revert puts it back as B read it — and, in the second session, A then runs a turn
// of its own. Either way the next edit_file on B asks for a read first: what B's file
// tools remembered of the read predates the revert.
func TestARevertedPathIsUnreadOnEveryNode(t *testing.T) {
	dsn := postgres.TestSchemaDSN(t)
	ws := t.TempDir()
	cfg := shellConfig("shared", ws, `          - when: {input: "^read"}
            tools: [{name: read_file, arguments: '{"path": "notes.txt"}'}]
          - when: {input: "^change"}
            tools: [{name: bash, arguments: '{"command": "echo two > notes.txt"}'}]
          - when: {input: "^edit"}
            tools: [{name: edit_file, arguments: '{"path": "notes.txt", "old_string": "one", "new_string": "ONE"}'}]
          - when: {input: "^hello"}
            reply: hi
`, "", "read_file", "bash", "edit_file")
	a, b := openOps(t, cfg, dsn), openOps(t, cfg, dsn)
	ctx := context.Background()
	for _, elsewhere := range []bool{false, true} {
		os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o644)
		s, err := a.Engine.CreateSession(ctx, "ops", "alice", nil)
		if err != nil {
			t.Fatal(err)
		}
		completeTurn(t, b, s.ID, "read it")
		changed := completeTurn(t, a, s.ID, "change it")
		if _, err := a.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: changed, By: "alice"}); err != nil {
			t.Fatal(err)
		}
		if elsewhere {
			completeTurn(t, a, s.ID, "hello") // the revert is before A's last commit now
		}
		completeTurn(t, b, s.ID, "edit it")
		evs, _ := b.Store.Events(ctx, s.ID, 0)
		tr, err := events.DecodeAs[*events.ToolResulted](lastOf(evs, events.TypeToolResulted))
		if err != nil || tr.Tool != "edit_file" || !tr.IsError || !strings.Contains(tr.Output, "has not been read") {
			t.Fatalf("a turn on A after the revert %v: the edit on B: %+v %v", elsewhere, tr, err)
		}
		if raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(raw) != "one\n" {
			t.Fatalf("the edit changed the file: %q", raw)
		}
	}
}
