package turnlog_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// treeHolds lists the files below dir that hold word, in any case.
func treeHolds(t *testing.T, dir, word string) []string {
	t.Helper()
	var in []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(bytes.ToLower(raw), []byte(word)) {
			in = append(in, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestAnErasedSessionsFilesLeaveNoByte: a word planted in a file a session's
// commands write and then rewrite — its contents in the undo log, its workspace its
// own, and a branch's workspace made from it — is found in neither the database,
// its WAL nor the workspaces' root once the session is erased with its branch;
// another session's file of the same content keeps it, until it is erased too.
func TestAnErasedSessionsFilesLeaveNoByte(t *testing.T) {
	t.Parallel()
	word, kept := plantWord(t, "file"), plantWord(t, "kept")
	root := t.TempDir()
	db := filepath.Join(t.TempDir(), "t.db")
	tl := opsAppIn(t, "session", root, db, `          - when: {input: "^plant (.+)$"}
            tools: [{name: bash, arguments: '{"command": "printf \"%s\\n\" {{match.1}} {{match.1}} > notes.txt"}'}]
          - when: {input: "^rewrite$"}
            tools: [{name: bash, arguments: '{"command": "echo rewritten > notes.txt"}'}]
          - when: {input: "^look$"}
            tools: [{name: bash, arguments: '{"command": "cat notes.txt > seen.txt"}'}]
`, "", "bash")
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	planted := completeTurn(t, tl, s.ID, "plant "+word)
	completeTurn(t, tl, s.ID, "rewrite")
	br, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: planted}, nil)
	if err != nil {
		t.Fatal(err)
	}
	completeTurn(t, tl, br.ID, "look")
	other, _ := tl.Engine.CreateSession(ctx, "ops", "bob", nil)
	completeTurn(t, tl, other.ID, "plant "+kept)
	completeTurn(t, tl, s.ID, "plant "+kept) // the same content as bob's, held once
	for _, w := range []string{word, kept} {
		if len(filesHold(t, db, w)) == 0 {
			t.Fatalf("%s is in no database file before the erasure: the search finds nothing", w)
		}
	}
	if len(treeHolds(t, filepath.Join(root, "sessions", br.ID), word)) == 0 {
		t.Fatal("the branch's workspace does not hold the planted word")
	}

	rec, err := tl.Engine.EraseSession(ctx, s.ID, "alice", true)
	if err != nil || rec.Counts.Sessions != 2 || rec.Counts.WorkspaceFolders < 2 || rec.Counts.FileContents == 0 {
		t.Fatalf("%+v %v", rec, err)
	}
	if in := filesHold(t, db, word); len(in) > 0 {
		t.Errorf("the planted file's content is still in %v", in)
	}
	if in := treeHolds(t, root, word); len(in) > 0 {
		t.Errorf("the planted file's content is still on disk: %v", in)
	}
	for _, id := range []string{s.ID, br.ID} {
		if _, err := os.Lstat(filepath.Join(root, "sessions", id)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the erased session %s's folder: %v", id, err)
		}
	}
	if len(filesHold(t, db, kept)) == 0 || len(treeHolds(t, filepath.Join(root, "sessions", other.ID), kept)) == 0 {
		t.Fatal("bob's file went with alice's sessions")
	}
	evs, _ := tl.Store.Events(ctx, other.ID, 0)
	if got, err := tl.Store.Content(ctx, other.ID, fileAfter(t, evs, "notes.txt")); err != nil || !bytes.Contains(got, []byte(kept)) {
		t.Fatalf("bob's content: %q %v", got, err)
	}
	if _, err := tl.Engine.EraseSession(ctx, other.ID, "bob", false); err != nil {
		t.Fatal(err)
	}
	if in := filesHold(t, db, kept); len(in) > 0 {
		t.Errorf("bob's content is still in %v", in)
	}
}

// fileAfter is the hash of the content the last FilesChanged of evs recorded at
// path after its change.
func fileAfter(t *testing.T, evs []events.Event, path string) string {
	t.Helper()
	hash := ""
	for _, ev := range evs {
		if ev.Type != events.TypeFilesChanged {
			continue
		}
		fc, err := events.DecodeAs[*events.FilesChanged](ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range fc.Changes {
			if c.Path == path && c.After != nil {
				hash = c.After.Hash
			}
		}
	}
	if hash == "" {
		t.Fatalf("no change of %s was recorded", path)
	}
	return hash
}
