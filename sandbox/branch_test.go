package sandbox_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
	"golang.org/x/sys/unix"
)

// TestABranchCopyIsItsSourceExactly: a branch's workspace is its source's entry
// for entry — modes (set-gid and read-only directories), owners, times, symlinks
// dangling or not, empty directories — without turnlog's .turnlog; the restores
// its plan returns land on the copy alone; and a second branch of the same folder
// leaves the first as it is.
func TestABranchCopyIsItsSourceExactly(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	old := time.Date(2020, 1, 2, 3, 4, 5, 987654321, time.UTC)
	for _, d := range []string{"src/empty", "src/deep/er", "src/shared", "locked"} {
		os.MkdirAll(filepath.Join(src, d), 0o755)
	}
	os.Chmod(filepath.Join(src, "src/shared"), 0o2775)
	os.WriteFile(filepath.Join(src, "src/a.go"), []byte("package a\n"), 0o640)
	os.Chown(filepath.Join(src, "src/a.go"), 1234, 5678)
	os.WriteFile(filepath.Join(src, "src/deep/er/run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(src, "locked/kept.txt"), []byte("kept\n"), 0o400)
	os.Symlink("a.go", filepath.Join(src, "src/link"))
	os.Symlink("../nowhere", filepath.Join(src, "src/dangling"))
	os.WriteFile(filepath.Join(src, "notes.txt"), []byte("one\n"), 0o644)
	os.MkdirAll(filepath.Join(src, ".turnlog/apply-x"), 0o700)
	filepath.WalkDir(src, func(p string, d fs.DirEntry, _ error) error {
		if p != src {
			os.Chtimes(p, old, old.Add(time.Duration(len(p))*time.Second))
		}
		return nil
	})
	lchtimes(t, filepath.Join(src, "src/link"), old)
	os.Chmod(filepath.Join(src, "locked"), 0o500)
	before := snapshot(t, src)

	parent := t.TempDir()
	dst := filepath.Join(parent, "b1")
	if err := sandbox.BranchWorkspace(context.Background(), src, dst, func() ([]sandbox.Restore, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(before, snapshot(t, dst)); d != "" {
		t.Fatalf("the copy differs:\n%s", d)
	}
	if _, err := os.Lstat(filepath.Join(dst, ".turnlog")); !os.IsNotExist(err) {
		t.Fatalf("the copy holds .turnlog: %v", err)
	}

	dst2 := filepath.Join(parent, "b2")
	back := &sandbox.EntryState{Kind: sandbox.EntryFile, Mode: 0o600, MtimeNs: old.UnixNano(), Size: 4}
	err := sandbox.BranchWorkspace(context.Background(), src, dst2, func() ([]sandbox.Restore, error) {
		return []sandbox.Restore{{Path: "notes.txt", Want: back, Content: []byte("ONE\n")}, {Path: "src/link"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dst2)
	if _, ok := got["src/link"]; ok || got["notes.txt"] == before["notes.txt"] {
		t.Fatalf("the plan's restores did not land: %v", got)
	}
	if d := diffSnapshots(before, snapshot(t, src)); d != "" {
		t.Fatalf("the source moved:\n%s", d)
	}
	if d := diffSnapshots(before, snapshot(t, dst)); d != "" {
		t.Fatalf("the first branch moved:\n%s", d)
	}
	if err := sandbox.BranchWorkspace(context.Background(), src, dst, func() ([]sandbox.Restore, error) { return nil, nil }); !errors.Is(err, sandbox.ErrBranchMade) {
		t.Fatalf("a second copy into a made workspace: %v", err)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 2 {
		t.Fatalf("copies left next to the workspaces: %v", ents)
	}
}

// TestABranchCopyWaitsForAnApplyToBeSettled: while a real command's apply waits
// for its result to be recorded, a branch of its workspace waits; once settled,
// the copy holds the apply's change and the plan is read after it.
func TestABranchCopyWaitsForAnApplyToBeSettled(t *testing.T) {
	s, _ := spec(t)
	s.SettleLater = true
	res := run(t, s, "echo applied > made.txt")
	var settled atomic.Bool
	waiting := make(chan struct{}, 1)
	sandbox.SetBranchWaiting(func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	})
	defer sandbox.SetBranchWaiting(nil)
	dst := filepath.Join(t.TempDir(), "b")
	done := make(chan error, 1)
	var plannedAfter atomic.Bool
	go func() {
		done <- sandbox.BranchWorkspace(context.Background(), s.Workspace, dst, func() ([]sandbox.Restore, error) {
			plannedAfter.Store(settled.Load())
			return nil, nil
		})
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("the copy did not wait for the apply: %v", err)
	}
	settled.Store(true)
	if err := res.Settle(true); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(dst, "made.txt")); string(raw) != "applied\n" || !plannedAfter.Load() {
		t.Fatalf("made.txt %q, planned after the settle: %v", raw, plannedAfter.Load())
	}
}

// TestLeftBranchCopiesAreRemoved: a copy a dead process left next to the
// workspaces goes; one whose maker lives (its lock held) and a workspace stay.
func TestLeftBranchCopiesAreRemoved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{sandbox.BranchPrefix + "a-1/x", sandbox.BranchPrefix + "b-2", "a"} {
		os.MkdirAll(filepath.Join(dir, d), 0o700)
	}
	live, err := os.Open(filepath.Join(dir, sandbox.BranchPrefix+"b-2"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := unix.Flock(int(live.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	n, err := sandbox.RemoveBranchCopies(dir)
	if err != nil || n != 1 {
		t.Fatalf("%d %v", n, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%v", ents)
	}
}
