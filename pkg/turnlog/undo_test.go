package turnlog_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/undo"
)

// opsApp opens turnlog (its log in db, or a temporary file) with the app ops: a
// scripted model that, after any tool, answers "done", else makes the calls rules
// (scripted rules, YAML lines) say; its agent has tools, each allowed by the policy,
// in the shared workspace ws; settings is the app's tools: section ("": none).
func opsApp(tb testing.TB, ws, db, rules, settings string, tools ...string) *turnlog.Turnlog {
	tb.Helper()
	return opsAppIn(tb, "shared", ws, db, rules, settings, tools...)
}

// opsAppIn is opsApp with workspaces of scope below ws.
func opsAppIn(tb testing.TB, scope, ws, db, rules, settings string, tools ...string) *turnlog.Turnlog {
	tb.Helper()
	return openOps(tb, shellConfig(scope, ws, rules, settings, tools...), db)
}

// openOps opens turnlog with cfg, its log in db (or a temporary file).
func openOps(tb testing.TB, cfg, db string) *turnlog.Turnlog {
	tb.Helper()
	if db == "" {
		db = filepath.Join(tb.TempDir(), "t.db")
	}
	tl, err := turnlog.Open(context.Background(), turnlog.Options{ConfigData: []byte(cfg), DB: db, Synchronous: "OFF"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tl.Close() })
	return tl
}

// shellConfig is the config of opsAppIn's app.
func shellConfig(scope, ws, rules, settings string, tools ...string) string {
	list := strings.Join(tools, ", ")
	if settings != "" {
		settings = "    tools:\n" + settings
	}
	cfg := fmt.Sprintf(`apps:
  ops:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: done
%s%s    agents:
      worker: {llm: script, tools: [%s]}
    policy:
      mode: workspace-write
      sandbox: %s
      workspace: %s
      workspace_scope: %s
      rules:
        - {name: tools, tools: [%s], decision: allow}
`, rules, settings, list, testMechanism(), ws, scope, list)
	return cfg
}

// testMechanism is the sandbox the shell apps' commands run in:
// TURNLOG_TEST_MECHANISM (make test runs the undo log's tests again with
// bubblewrap), landlock by default.
func testMechanism() string {
	if m := os.Getenv("TURNLOG_TEST_MECHANISM"); m != "" {
		return m
	}
	return "landlock"
}

// undoApp is an app whose every turn runs command in the shared workspace ws.
func undoApp(t *testing.T, ws, command string) *turnlog.Turnlog {
	t.Helper()
	return opsApp(t, ws, "", fmt.Sprintf("          - tools: [{name: bash, arguments: '{\"command\": %q}'}]\n", command), "", "bash")
}

// completeTurn runs a turn of session with input to its end, which must be
// completed, and returns its id.
func completeTurn(tb testing.TB, tl *turnlog.Turnlog, session, input string) string {
	tb.Helper()
	st, err := tl.Engine.StartTurn(context.Background(), session, input)
	if err != nil {
		tb.Fatal(err)
	}
	if res, err := st.Wait(); err != nil || res.Status != fsm.StatusCompleted {
		tb.Fatalf("%s: %+v %v", input, res, err)
	}
	return st.ID
}

// TestACommandsChangesAreRecordedWithItsResult: a real command that removes a tree,
// edits a file and makes one leaves a FilesChanged in the very append of its result
// — each path before and after, the contents the session can read back — and a
// replay of the session takes it from the recording, running nothing.
func TestACommandsChangesAreRecordedWithItsResult(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src/a.go"), []byte("package a\n"), 0o640)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o644)
	tl := undoApp(t, ws, "rm -rf src && sed -i s/one/two/ notes.txt && echo new > made.txt")
	ctx := context.Background()
	s, err := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	completeTurn(t, tl, s.ID, "tidy up")
	recorded, err := tl.Store.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var result, files events.Event
	for i, ev := range recorded {
		if ev.Type == events.TypeFilesChanged {
			files, result = ev, recorded[i-1]
		}
	}
	if files.Type == "" || result.Type != events.TypeToolResulted || files.Path != fsm.FilesPath(result.Path) || !files.At.Equal(result.At) {
		t.Fatalf("the FilesChanged does not follow its result in one append: %+v after %+v", files, result)
	}
	fc, err := events.DecodeAs[*events.FilesChanged](files)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]events.FileChange{}
	for _, c := range fc.Changes {
		byPath[c.Path] = c
	}
	for p, want := range map[string][2]string{"src/a.go": {"package a\n", ""}, "notes.txt": {"one\n", "two\n"}, "made.txt": {"", "new\n"}} {
		c, ok := byPath[p]
		if !ok || c.NotRevertible != "" {
			t.Fatalf("%s: %+v (changes %+v)", p, c, fc.Changes)
		}
		for i, st := range []*events.FileState{c.Before, c.After} {
			if (st == nil) != (want[i] == "") {
				t.Fatalf("%s: before %+v after %+v", p, c.Before, c.After)
			}
			if st == nil {
				continue
			}
			got, err := tl.Store.Content(ctx, s.ID, st.Hash)
			if err != nil || string(got) != want[i] {
				t.Fatalf("%s: content %s is %q (%v), want %q", p, st.Hash, got, err, want[i])
			}
		}
	}
	if c := byPath["src"]; c.Before == nil || c.Before.Kind != events.FileKindDir || c.After != nil || fc.Tool != "bash" || fc.CallID == "" {
		t.Fatalf("src: %+v; %s %s", c, fc.Tool, fc.CallID)
	}
	rep, err := tl.ReplayOnly(ctx, recorded)
	if err != nil || rep.Events != len(recorded) {
		t.Fatalf("replay: %+v %v", rep, err)
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(raw) != "two\n" {
		t.Fatalf("after the replay notes.txt holds %q", raw)
	}
}

// tree describes every entry below dir but dir itself and .turnlog: its kind and
// mode, its time, and a file's content or a link's target.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == ".":
			return nil
		case rel == ".turnlog":
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d", fi.Mode(), fi.ModTime().UnixNano())
		if target, err := os.Readlink(p); err == nil {
			desc += " → " + target
		} else if fi.Mode().IsRegular() {
			raw, _ := os.ReadFile(p)
			desc += " " + string(raw)
		}
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// treeTurn runs one turn of an app whose bash runs command in ws, in a new session,
// and returns the workspace's tree before and after it.
func treeTurn(t *testing.T, ws, command string) (tl *turnlog.Turnlog, s projection.Session, turn string, before, after map[string]string) {
	t.Helper()
	before = tree(t, ws)
	tl = undoApp(t, ws, command)
	s, err := tl.Engine.CreateSession(context.Background(), "ops", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	turn = completeTurn(t, tl, s.ID, "do it")
	return tl, s, turn, before, tree(t, ws)
}

// TestARevertOfARevertPastTheDiffsShownPutsTheTurnBack: a turn edits more files than
// a page shows diffs of, so its record keeps most of their after sides by hash
// only; its revert, undone, still leaves every file as the turn left it (the revert's
// own record kept them as it replaced them).
func TestARevertOfARevertPastTheDiffsShownPutsTheTurnBack(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for i := range 3 * undo.DiffsShown {
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprintf("one %d\n", i)), 0o644)
	}
	tl, s, turn, before, turned := treeTurn(t, ws, "sed -i s/one/two/ f*.txt")
	ctx := context.Background()
	if maps.Equal(turned, before) {
		t.Fatal("the turn changed nothing")
	}
	rev, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: turn, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); !maps.Equal(got, before) {
		t.Fatalf("reverted, the workspace is\n%v\nnot\n%v", got, before)
	}
	if _, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Revert: rev.ID, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); !maps.Equal(got, turned) {
		t.Fatalf("the revert undone, the workspace is\n%v\nnot\n%v", got, turned)
	}
}

// TestATurnIsRevertedAndTheRevertUndone: a turn's rm -rf, edit and new file are
// reverted to the workspace as it was before the turn, recorded as a
// WorkspaceReverted; undoing that revert brings the turn's files back; a path
// changed since is a revert_conflict naming it, and nothing changes, until forced.
func TestATurnIsRevertedAndTheRevertUndone(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, "src/empty"), 0o750)
	os.WriteFile(filepath.Join(ws, "src/a.go"), []byte("package a\n"), 0o640)
	os.Symlink("a.go", filepath.Join(ws, "src/link"))
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o644)
	old := time.Date(2022, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, p := range []string{"src/empty", "src/a.go", "notes.txt", "src"} {
		os.Chtimes(filepath.Join(ws, p), old, old)
	}
	tl, s, first, before, turned := treeTurn(t, ws, "rm -rf src && sed -i s/one/two/ notes.txt && echo new > made.txt")
	ctx := context.Background()

	rev, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: first, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); !maps.Equal(got, before) {
		t.Fatalf("reverted, the workspace is\n%v\nnot\n%v", got, before)
	}
	if rev.Count == 0 || len(rev.Turns) != 1 || rev.Turns[0] != first {
		t.Fatalf("%+v", rev)
	}
	if _, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: first, By: "alice"}); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("a turn reverted twice: %v", err)
	}
	undone, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Revert: rev.ID, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, ws); !maps.Equal(got, turned) {
		t.Fatalf("the revert undone, the workspace is\n%v\nnot\n%v", got, turned)
	}

	os.WriteFile(filepath.Join(ws, "made.txt"), []byte("someone else's\n"), 0o644)
	changed := tree(t, ws)
	_, err = tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Revert: undone.ID, By: "alice"})
	var rc *fsm.RevertConflictError
	if !events.IsCode(err, events.CodeRevertConflict) || !errors.As(err, &rc) || len(rc.Conflicts) != 1 || rc.Conflicts[0].Path != "made.txt" {
		t.Fatalf("a conflict: %v", err)
	}
	if got := tree(t, ws); !maps.Equal(got, changed) {
		t.Fatal("a refused revert changed files")
	}
	forced, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Revert: undone.ID, By: "alice", Force: true})
	if err != nil || len(forced.Overwritten) != 1 {
		t.Fatalf("forced: %+v %v", forced, err)
	}
	if got := tree(t, ws); !maps.Equal(got, before) {
		t.Fatalf("forced, the workspace is\n%v\nnot\n%v", got, before)
	}
	// Another turn after the reverts; then the whole session, reverts between its
	// turns, replays without running anything or touching a file.
	completeTurn(t, tl, s.ID, "tidy up again")
	again := tree(t, ws)
	// The turn after the reverts told the model of them: a note before its input.
	items, err := tl.Store.History(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, it := range items {
		if it.Role == "system" && strings.HasPrefix(it.Content, fsm.RevertNotePrefix) {
			notes = append(notes, it.Content)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], forced.ID) || !strings.Contains(notes[0], rev.ID) || !strings.Contains(notes[0], "made.txt") {
		t.Fatalf("the notes of the reverts: %q", notes)
	}
	evs, _ := tl.Store.Events(ctx, s.ID, 0)
	n := 0
	for _, ev := range evs {
		if ev.Type == events.TypeWorkspaceReverted {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d reverts recorded, want 3", n)
	}
	rep, err := tl.ReplayOnly(ctx, evs)
	if err != nil || rep.Events != len(evs) || rep.Turns != 2 {
		t.Fatalf("replay: %+v %v", rep, err)
	}
	if got := tree(t, ws); !maps.Equal(got, again) {
		t.Fatal("the replay touched the workspace")
	}
}

// TestARevertedPathIsUnreadAgain: a file read in one turn, changed by a command in
// the next and put back by a revert holds what was read — yet it counts as unread:
// edit_file asks for a read before it changes it.
func TestARevertedPathIsUnreadAgain(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o644)
	tl := opsApp(t, ws, "", `          - when: {input: "^read"}
            tools: [{name: read_file, arguments: '{"path": "notes.txt"}'}]
          - when: {input: "^change"}
            tools: [{name: bash, arguments: '{"command": "echo two > notes.txt"}'}]
          - when: {input: "^edit"}
            tools: [{name: edit_file, arguments: '{"path": "notes.txt", "old_string": "one", "new_string": "ONE"}'}]
`, "", "read_file", "bash", "edit_file")
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	turn := func(input string) string { return completeTurn(t, tl, s.ID, input) }
	turn("read it")
	changed := turn("change it")
	if _, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: changed, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(raw) != "one\n" {
		t.Fatalf("reverted: %q", raw)
	}
	turn("edit it")
	evs, _ := tl.Store.Events(ctx, s.ID, 0)
	tr, err := events.DecodeAs[*events.ToolResulted](lastOf(evs, events.TypeToolResulted))
	if err != nil || tr.Tool != "edit_file" || !tr.IsError || !strings.Contains(tr.Output, "has not been read") {
		t.Fatalf("the edit after the revert: %+v %v", tr, err)
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(raw) != "one\n" {
		t.Fatalf("the edit changed the file: %q", raw)
	}
}

func lastOf(evs []events.Event, typ string) events.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			return evs[i]
		}
	}
	return events.Event{}
}

// TestTheFileToolsChangesAreRecordedAndReverted: write_file (into a directory it
// makes) and edit_file record what they changed with their results, and a revert
// of each turn puts the files back.
func TestTheFileToolsChangesAreRecordedAndReverted(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o640)
	before := tree(t, ws)
	tl := opsApp(t, ws, "", `          - when: {input: "^write"}
            tools: [{name: write_file, arguments: '{"path": "docs/new.txt", "content": "hello\n"}'}]
          - when: {input: "^read"}
            tools: [{name: read_file, arguments: '{"path": "notes.txt"}'}]
          - when: {input: "^edit"}
            tools: [{name: edit_file, arguments: '{"path": "notes.txt", "old_string": "one", "new_string": "ONE"}'}]
`, "", "read_file", "write_file", "edit_file")
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	turn := func(input string) string { return completeTurn(t, tl, s.ID, input) }
	wrote := turn("write it")
	turn("read it")
	edited := turn("edit it")
	if raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(raw) != "ONE\n" {
		t.Fatalf("the edit: %q", raw)
	}
	evs, _ := tl.Store.Events(ctx, s.ID, 0)
	recorded := map[string][]string{}
	for _, ev := range evs {
		if ev.Type == events.TypeFilesChanged {
			fc, _ := events.DecodeAs[*events.FilesChanged](ev)
			for _, c := range fc.Changes {
				recorded[fc.Tool] = append(recorded[fc.Tool], c.Path)
			}
		}
	}
	if fmt.Sprint(recorded["write_file"]) != "[docs docs/new.txt]" || fmt.Sprint(recorded["edit_file"]) != "[notes.txt]" {
		t.Fatalf("recorded: %v", recorded)
	}
	for _, t2 := range []string{edited, wrote} {
		if _, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: t2, By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := tree(t, ws); !maps.Equal(got, before) {
		t.Fatalf("reverted, the workspace is\n%v\nnot\n%v", got, before)
	}
}

// TestAToolPastItsTimeoutLeavesNoChangeUnrecorded: a command that outlives its
// call's timeout — the engine records the timeout and goes on — writes a file; its
// apply then cannot be recorded with the result any more, so it is taken back: the
// file is on disk only if the log records it.
func TestAToolPastItsTimeoutLeavesNoChangeUnrecorded(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tl := opsApp(t, ws, "", "          - tools: [{name: bash, arguments: '{\"command\": \"echo late > late.txt; sleep 2\"}'}]\n", "      bash: {timeout: 300ms}\n", "bash")
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	completeTurn(t, tl, s.ID, "go")
	// The command is stopped at the timeout and its writes applied after: wait until
	// the apply is settled (its staging directory gone).
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Lstat(filepath.Join(ws, ".turnlog")); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the apply was not settled within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	evs, _ := tl.Store.Events(ctx, s.ID, 0)
	recorded := lastOf(evs, events.TypeFilesChanged).Type != ""
	_, statErr := os.Lstat(filepath.Join(ws, "late.txt"))
	if onDisk := statErr == nil; onDisk != recorded {
		t.Fatalf("late.txt on disk: %v, its change recorded: %v", onDisk, recorded)
	}
	if tr, _ := events.DecodeAs[*events.ToolResulted](lastOf(evs, events.TypeToolResulted)); tr == nil || tr.ErrorKind != "timeout" {
		t.Fatalf("the result: %+v", tr)
	}
}

// TestATurnAfterARevertResumes: the first turn after a revert waits for an approval
// and, answered, resumes with the same note of the revert it started with (its
// recorded model call matches).
func TestATurnAfterARevertResumes(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tl := opsApp(t, ws, "", "          - tools: [{name: bash, arguments: '{\"command\": \"echo more >> log.txt\"}'}]\n", "      bash: {needs_approval: true}\n", "bash")
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	yes := true
	turn := func() string {
		t.Helper()
		st, err := tl.Engine.StartTurn(ctx, s.ID, "log it")
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.Wait()
		if err != nil || res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 {
			t.Fatalf("suspend: %+v %v", res, err)
		}
		rt, err := tl.Engine.Resume(ctx, s.ID, "alice", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: &yes}})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := rt.Wait(); err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("resume: %+v %v", res, err)
		}
		return st.ID
	}
	first := turn()
	if _, err := tl.Engine.Revert(ctx, fsm.RevertRequest{Session: s.ID, Turn: first, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	turn()
	if raw, _ := os.ReadFile(filepath.Join(ws, "log.txt")); string(raw) != "more\n" {
		t.Fatalf("log.txt: %q", raw)
	}
}
