package turnlog_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// capsRules: "edit X Y" appends a line to each file named.
const capsRules = `          - when: {input: "^edit ([^ ]+)$"}
            tools: [{name: bash, arguments: '{"command": "echo more >> {{match.1}}"}'}]
          - when: {input: "^edit ([^ ]+) ([^ ]+) ([^ ]+) ([^ ]+)$"}
            tools: [{name: bash, arguments: '{"command": "echo more >> {{match.1}} && echo more >> {{match.2}} && echo more >> {{match.3}} && echo more >> {{match.4}}"}'}]
`

// changesOf are the changes the FilesChanged of a session's turn recorded, by path.
func changesOf(t *testing.T, evs []events.Event, turn string) map[string]events.FileChange {
	t.Helper()
	out := map[string]events.FileChange{}
	for _, ev := range evs {
		if ev.Type != events.TypeFilesChanged || ev.Turn != turn {
			continue
		}
		fc, err := events.DecodeAs[*events.FilesChanged](ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range fc.Changes {
			out[c.Path] = c
		}
	}
	return out
}

// TestTheUndoCapsAndExcludesHold: policy.undo's caps bound what the log keeps — a
// file past file_bytes, the second file past turn_bytes in one turn, a turn past
// session_bytes counted across a restart — and exclude keeps a path's contents out;
// each such change is recorded with hashes, says why it cannot be reverted, and
// makes its turn's revert refuse naming it; a turn within the caps reverts.
func TestTheUndoCapsAndExcludesHold(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	block := strings.Repeat("x", 3000) + "\n"
	for _, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "big.txt", "gen/out.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, f)), 0o755)
		content := f + "\n" + block // each file its own content: none is held once for two
		if f == "big.txt" {
			content = strings.Repeat(block, 4)
		}
		os.WriteFile(filepath.Join(ws, f), []byte(content), 0o644)
	}
	cfg := strings.Replace(shellConfig("shared", ws, capsRules, "", "bash"), "\n      rules:\n        - {name: tools",
		"\n      undo: {file_bytes: 10000, turn_bytes: 7000, session_bytes: 14000, exclude: ['gen/**']}\n      rules:\n        - {name: tools", 1)
	db := filepath.Join(t.TempDir(), "t.db")
	tl := openOps(t, cfg, db)
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)

	// Each kept file is a 3007-byte before and a 3012-byte after: a turn keeps one
	// file's pair (6019 ≤ 7000), the second file's goes past turn_bytes.
	first := completeTurn(t, tl, s.ID, "edit a.txt b.txt big.txt gen/out.txt")
	evs, _ := tl.Store.Events(ctx, s.ID, 0)
	got := changesOf(t, evs, first)
	for path, why := range map[string]string{"a.txt": "", "b.txt": "a turn (7000 bytes)", "big.txt": "a file (10000 bytes)", "gen/out.txt": "policy.undo.exclude \"gen/**\""} {
		c, ok := got[path]
		if !ok || c.Before == nil || c.Before.Hash == "" || c.After == nil || c.After.Hash == "" {
			t.Fatalf("%s: %+v; the call: %s", path, c, lastOf(evs, events.TypeToolResulted).Data)
		}
		if (why == "") != (c.NotRevertible == "") || !strings.Contains(c.NotRevertible, why) {
			t.Fatalf("%s: not revertible %q, want %q", path, c.NotRevertible, why)
		}
		if _, err := tl.Store.Content(ctx, s.ID, c.Before.Hash); (err == nil) != (why == "") {
			t.Fatalf("%s: its before content kept: %v", path, err)
		}
	}
	_, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: first, By: "alice"})
	if !events.IsCode(err, events.CodeConflict) || !strings.Contains(err.Error(), "b.txt") || !strings.Contains(err.Error(), "gen/out.txt") {
		t.Fatalf("a revert of the capped turn: %v", err)
	}

	// 6019 bytes kept so far; a restart still counts them: the next turn keeps one
	// more pair (12038 ≤ 14000), the one after goes past session_bytes.
	tl.Close()
	tl = openOps(t, cfg, db)
	second := completeTurn(t, tl, s.ID, "edit c.txt")
	third := completeTurn(t, tl, s.ID, "edit d.txt")
	evs, _ = tl.Store.Events(ctx, s.ID, 0)
	if c := changesOf(t, evs, second)["c.txt"]; c.NotRevertible != "" {
		t.Fatalf("c.txt: %+v", c)
	}
	if c := changesOf(t, evs, third)["d.txt"]; !strings.Contains(c.NotRevertible, "a session (14000 bytes)") {
		t.Fatalf("d.txt past the session's cap: %+v", c)
	}
	if _, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: second, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "c.txt")); string(raw) != "c.txt\n"+block {
		t.Fatalf("c.txt reverted holds %d bytes", len(raw))
	}
}
