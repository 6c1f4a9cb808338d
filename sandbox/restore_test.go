package sandbox_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
	"golang.org/x/sys/unix"
)

// snapshot describes every entry below dir but dir itself and .turnlog: kind,
// mode, owner, modification time, and a file's content or a link's target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if rel == ".turnlog" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v %o %d:%d %d", fi.Mode().Type(), fi.Mode().Perm()|fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky), st.Uid, st.Gid, fi.ModTime().UnixNano())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " → " + target
		case fi.Mode().IsRegular():
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

func diffSnapshots(want, got map[string]string) string {
	var lines []string
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			lines = append(lines, fmt.Sprintf("%s: want %q, got %q", p, w, g))
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			lines = append(lines, fmt.Sprintf("%s: not wanted, got %q", p, g))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// undoOf runs command in s's workspace and returns what putting each path it
// changed back takes, read from its apply before the apply is settled.
func undoOf(t *testing.T, s sandbox.Spec, command string) []sandbox.Restore {
	t.Helper()
	s.SettleLater = true
	res := run(t, s, command)
	if res.ExitCode != 0 {
		t.Fatalf("%s: %+v", command, res)
	}
	rs := undoing(t, res)
	if err := res.Settle(true); err != nil {
		t.Fatal(err)
	}
	return rs
}

// undoing is what putting back each path res's apply (or restore) changed takes.
func undoing(t *testing.T, res *sandbox.Result) []sandbox.Restore { return undoingTB(t, res) }

func undoingTB(t testing.TB, res *sandbox.Result) []sandbox.Restore {
	t.Helper()
	var rs []sandbox.Restore
	err := res.FileChanges(func(cs []sandbox.FileChange) error {
		for _, c := range cs {
			r := sandbox.Restore{Path: c.Path, Want: c.Before, Expect: c.After}
			if c.Before != nil && c.Before.Kind == sandbox.EntryFile {
				r.Content = []byte(read(t, c.OpenBefore))
			}
			if c.After != nil && c.After.Kind == sandbox.EntryFile {
				sum := sha256.Sum256([]byte(read(t, c.OpenAfter)))
				r.ExpectHash = "sha256:" + hex.EncodeToString(sum[:])
			}
			rs = append(rs, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// restore puts rs back and settles the restore as recorded.
func restore(t *testing.T, dir string, rs []sandbox.Restore, force bool) []sandbox.RestoreConflict {
	t.Helper()
	res, conflicts, err := sandbox.RestoreFiles(dir, "revert", rs, force)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Settle(true); err != nil {
		t.Fatal(err)
	}
	return conflicts
}

// TestARemovedTreeIsRestoredExactly: a real command's rm -rf of a tree — files of
// their own modes, owners and times, a symlink, an empty directory, a set-gid
// directory — and an edit and a new file are put back exactly as they were.
func TestARemovedTreeIsRestoredExactly(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	ws := s.Workspace
	old := time.Date(2021, 5, 6, 7, 8, 9, 123456789, time.UTC)
	for _, d := range []string{"src/empty", "src/deep/er", "src/shared"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	os.Chmod(filepath.Join(ws, "src/empty"), 0o750)
	os.Chmod(filepath.Join(ws, "src/shared"), 0o2775)
	os.WriteFile(filepath.Join(ws, "src/a.go"), []byte("package a\n"), 0o640)
	os.Chown(filepath.Join(ws, "src/a.go"), 1234, 5678)
	os.WriteFile(filepath.Join(ws, "src/deep/er/run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	os.WriteFile(filepath.Join(ws, "src/blank"), nil, 0o600)
	os.Symlink("a.go", filepath.Join(ws, "src/link"))
	os.Symlink("../nowhere", filepath.Join(ws, "src/dangling"))
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\ntwo\n"), 0o644)
	filepath.WalkDir(filepath.Join(ws, "src"), func(p string, d fs.DirEntry, _ error) error {
		os.Chtimes(p, old, old.Add(time.Duration(len(p))*time.Second))
		return nil
	})
	os.Chtimes(filepath.Join(ws, "notes.txt"), old, old)
	lchtimes(t, filepath.Join(ws, "src/link"), old)
	before := snapshot(t, ws)

	rs := undoOf(t, s, `rm -rf src && sed -i s/one/ONE/ notes.txt && mkdir made && echo new > made/f.txt`)
	if diffSnapshots(before, snapshot(t, ws)) == "" {
		t.Fatal("the command changed nothing")
	}
	if conflicts := restore(t, ws, rs, false); len(conflicts) != 0 {
		t.Fatalf("conflicts: %+v", conflicts)
	}
	if d := diffSnapshots(before, snapshot(t, ws)); d != "" {
		t.Fatalf("restored, it differs:\n%s", d)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".turnlog")); err == nil {
		t.Error("the restore left its staging directory")
	}
}

func lchtimes(t *testing.T, p string, at time.Time) {
	t.Helper()
	ts := []syscall.Timespec{syscall.NsecToTimespec(at.UnixNano()), syscall.NsecToTimespec(at.UnixNano())}
	if err := utimesNoFollow(p, ts); err != nil {
		t.Fatal(err)
	}
}

// TestAConflictIsRefusedThenForced: a path changed since the command is a
// conflict, named with both hashes, and nothing is restored; forced, every path is.
func TestAConflictIsRefusedThenForced(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	ws := s.Workspace
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("b\n"), 0o644)
	before := snapshot(t, ws)
	rs := undoOf(t, s, `echo A > a.txt && echo B > b.txt`)
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("someone else's\n"), 0o644)
	changed := snapshot(t, ws)
	res, conflicts, err := sandbox.RestoreFiles(ws, "revert", rs, false)
	if err != nil || res != nil || len(conflicts) != 1 || conflicts[0].Path != "b.txt" ||
		!strings.HasPrefix(conflicts[0].Expected, "sha256:") || !strings.HasPrefix(conflicts[0].Found, "sha256:") || conflicts[0].Expected == conflicts[0].Found {
		t.Fatalf("%v %+v %v", res, conflicts, err)
	}
	if d := diffSnapshots(changed, snapshot(t, ws)); d != "" {
		t.Fatalf("a refused restore changed:\n%s", d)
	}
	if conflicts := restore(t, ws, rs, true); len(conflicts) != 1 {
		t.Fatalf("forced: %+v", conflicts)
	}
	if d := diffSnapshots(before, snapshot(t, ws)); d != "" {
		t.Fatalf("forced, it differs from before the command:\n%s", d)
	}
}

// TestARestoreNeverLeavesTheWorkspace: a path outside, in .git, in .turnlog or on
// the deny list is refused before anything is done.
func TestARestoreNeverLeavesTheWorkspace(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	file := &sandbox.EntryState{Kind: sandbox.EntryFile, Mode: 0o644, Size: 1}
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", ".git/config", "sub/.GIT/hooks/pre-commit", ".turnlog/x", ".env", ""} {
		if _, _, err := sandbox.RestoreFiles(ws, "revert", []sandbox.Restore{{Path: p, Want: file, Content: []byte("x")}}, true); err == nil {
			t.Errorf("%q was restored", p)
		}
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Fatalf("the workspace holds %v", ents)
	}
}

func utimesNoFollow(p string, ts []syscall.Timespec) error {
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{unix.Timespec(ts[0]), unix.Timespec(ts[1])}, unix.AT_SYMLINK_NOFOLLOW)
}

// TestAnEditOfFiveHundredFilesIsRestored: sed -i across 500 files, put back; and
// what the restore itself changed, put back in turn, is the edit again.
func TestAnEditOfFiveHundredFilesIsRestored(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	ws := s.Workspace
	for i := range 500 {
		d := filepath.Join(ws, fmt.Sprintf("pkg%02d", i%20))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.go", i)), []byte(fmt.Sprintf("package p\n// old %d\nvar x = %d\n", i, i)), 0o644)
	}
	before := snapshot(t, ws)
	rs := undoOf(t, s, `sed -i 's/old/new/' pkg*/*.go`)
	edited := snapshot(t, ws)
	if n := len(rs); n < 500 {
		t.Fatalf("%d changes", n)
	}
	res, conflicts, err := sandbox.RestoreFiles(ws, "revert", rs, false)
	if err != nil || len(conflicts) != 0 {
		t.Fatalf("%+v %v", conflicts, err)
	}
	// What the restore changed, read as an apply's changes are: undoing it is the
	// edit again.
	again := undoing(t, res)
	res.Settle(true)
	if d := diffSnapshots(before, snapshot(t, ws)); d != "" {
		t.Fatalf("restored, it differs:\n%.2000s", d)
	}
	if conflicts := restore(t, ws, again, false); len(conflicts) != 0 {
		t.Fatalf("%+v", conflicts)
	}
	if d := diffSnapshots(edited, snapshot(t, ws)); d != "" {
		t.Fatalf("the restore undone, it differs from the edit:\n%.2000s", d)
	}
}

// TestARevertNeverRemovesWhatItDoesNotKnow: a directory a command made goes with a
// revert only with nothing in it but what the command made: a file put there since
// is a conflict, and a denied file or a .git there refuses the revert even forced.
func TestARevertNeverRemovesWhatItDoesNotKnow(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	ws := s.Workspace
	rs := undoOf(t, s, `mkdir build && touch build/a`)
	os.WriteFile(filepath.Join(ws, "build/notes.txt"), []byte("a person's\n"), 0o644)
	res, conflicts, err := sandbox.RestoreFiles(ws, "revert", rs, false)
	if err != nil || res != nil || len(conflicts) != 1 || conflicts[0].Path != "build/notes.txt" || conflicts[0].Expected != "absent" {
		t.Fatalf("%v %+v %v", res, conflicts, err)
	}
	os.WriteFile(filepath.Join(ws, "build/.env"), []byte("SECRET=1\n"), 0o600)
	if _, _, err := sandbox.RestoreFiles(ws, "revert", rs, true); err == nil || !strings.Contains(err.Error(), "build/.env") {
		t.Fatalf("forced over a denied file: %v", err)
	}
	for _, p := range []string{"build/a", "build/notes.txt", "build/.env"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err != nil {
			t.Fatalf("%s is gone: %v", p, err)
		}
	}
}

// TestADirectoryReplacedByAFileIsRestored: a command that makes a file where a
// directory was is recorded, and put back.
func TestADirectoryReplacedByAFileIsRestored(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	ws := s.Workspace
	os.MkdirAll(filepath.Join(ws, "d/sub"), 0o755)
	os.WriteFile(filepath.Join(ws, "d/sub/x"), []byte("x\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "e"), 0o755)
	os.WriteFile(filepath.Join(ws, "e/y"), []byte("y\n"), 0o644)
	before := snapshot(t, ws)
	rs := undoOf(t, s, `rm -rf d e && echo hi > d && ln -s d e`)
	if conflicts := restore(t, ws, rs, false); len(conflicts) != 0 {
		t.Fatalf("%+v", conflicts)
	}
	if d := diffSnapshots(before, snapshot(t, ws)); d != "" {
		t.Fatalf("restored, it differs:\n%s", d)
	}
}

// TestAPathMadeAgainAfterTheApplyIsNoticed: a path the apply removed that another
// writer made again before the reading is marked moved.
func TestAPathMadeAgainAfterTheApplyIsNoticed(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.SettleLater = true
	os.WriteFile(filepath.Join(s.Workspace, "f"), []byte("old\n"), 0o644)
	res := run(t, s, `rm f`)
	defer res.Settle(true)
	os.WriteFile(filepath.Join(s.Workspace, "f"), []byte("theirs\n"), 0o644)
	err := res.FileChanges(func(cs []sandbox.FileChange) error {
		if len(cs) != 1 || cs[0].Path != "f" || !cs[0].Moved {
			return fmt.Errorf("changes: %+v", cs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
