package sandbox_test

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
	"golang.org/x/sys/unix"
)

// These run real commands that change tens of thousands of files: what they write
// reaches the workspace completely or not at all. The 100,000-file ones work on a
// tmpfs of their own (see tmpfsSpec).

// TestAHundredThousandFilesLand: a command that makes 100,000 files in 10,000
// directories — an npm install, a git clone — lands every one of them, counted
// exactly.
func TestAHundredThousandFilesLand(t *testing.T) {
	t.Parallel()
	s := tmpfsSpec(t)
	res := run(t, s, `mkdir -p out/d{0..9999} && for d in {0..9999}; do for f in {0..9}; do echo "$d $f" > out/d$d/f$f; done; done`)
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	n := 0
	err := filepath.Walk(filepath.Join(s.Workspace, "out"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		n++
		var d, f int
		fmt.Sscanf(strings.TrimPrefix(p, filepath.Join(s.Workspace, "out")), "/d%d/f%d", &d, &f)
		if raw, err := os.ReadFile(p); err != nil || string(raw) != fmt.Sprintf("%d %d\n", d, f) {
			return fmt.Errorf("%s holds %q (%v)", p, raw, err)
		}
		return nil
	})
	if err != nil || n != 100_000 {
		t.Fatalf("%d of 100,000 files landed: %v", n, err)
	}
	if c := res.Changes; c == nil || c.Count != 110_001 || len(c.Paths) != sandbox.MaxListedChanges || c.RefusedCount != 0 {
		t.Fatalf("changes: %+v", c)
	}
	// The whole plan reaches turnlog through the apply's journal, kept until Settle.
	s.SettleLater = true
	res = run(t, s, `mkdir -p more/d{0..999} && for d in {0..999}; do for f in {0..99}; do : > more/d$d/f$f; done; done`)
	applied, err := res.Applied()
	if err != nil || len(applied) != 101_001 {
		t.Fatalf("the journal lists %d steps (%v), want 101,001", len(applied), err)
	}
	if err := res.Settle(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(s.Workspace, ".turnlog")); err == nil {
		t.Fatal("settling left .turnlog")
	}
}

// TestRebuildingADirectoryKeepsEveryRow: a command that renames the 3,000 files of
// a directory by copying them out, removing the directory and writing them back
// under new names leaves every one, and none of the old names.
func TestRebuildingADirectoryKeepsEveryRow(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	data := filepath.Join(s.Workspace, "data")
	os.MkdirAll(data, 0o755)
	for i := range 3000 {
		os.WriteFile(filepath.Join(data, fmt.Sprintf("row%04d", i)), []byte(fmt.Sprintf("row %d\n", i)), 0o644)
	}
	res := run(t, s, `cp -a data/. /tmp/c && rm -rf data && mkdir data && python3 -c '
import os, shutil
for f in os.listdir("/tmp/c"): shutil.move("/tmp/c/" + f, "data/renamed-" + f)'`)
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	names, _ := os.ReadDir(data)
	if len(names) != 3000 {
		t.Fatalf("%d rows in data/, want 3000: %+v", len(names), res.Changes)
	}
	for i := range 3000 {
		if raw, err := os.ReadFile(filepath.Join(data, fmt.Sprintf("renamed-row%04d", i))); err != nil || string(raw) != fmt.Sprintf("row %d\n", i) {
			t.Fatalf("row %d: %q %v", i, raw, err)
		}
	}
}

// TestRemovingAHundredThousandFilesLands: rm -rf of a tree of 100,000 files lands,
// every path of it counted.
func TestRemovingAHundredThousandFilesLands(t *testing.T) {
	t.Parallel()
	s := tmpfsSpec(t)
	for d := range 100 {
		dir := filepath.Join(s.Workspace, "tree", fmt.Sprintf("d%02d", d))
		os.MkdirAll(dir, 0o755)
		for f := range 1000 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", f)), []byte("x"), 0o644)
		}
	}
	os.WriteFile(filepath.Join(s.Workspace, "kept"), []byte("kept"), 0o644)
	res := run(t, s, "rm -rf tree")
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Lstat(filepath.Join(s.Workspace, "tree")); err == nil {
		t.Fatal("tree is still there")
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, "kept")); string(raw) != "kept" {
		t.Fatal("a file beside the tree changed")
	}
	if c := res.Changes; c == nil || c.Count != 100_101 {
		t.Fatalf("changes: %+v", c)
	}
}

// TestEntriesHaveAQuota: a command that makes more entries than its quota (empty
// files, directories) fails inside with ENOSPC, and nothing of it lands.
func TestEntriesHaveAQuota(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.WriteEntries = 1000
	res := run(t, s, `mkdir many; for i in {1..2000}; do : > many/e$i || { echo FAILED $i; break; }; done; mkdir -p dirs/{1..500} 2>/dev/null || echo FAILED dirs; true`)
	if !strings.Contains(res.Stdout, "FAILED") || !strings.Contains(res.Stderr, "No space left on device") {
		t.Fatalf("no entry failed past the quota: %+v", res)
	}
	if entries, _ := os.ReadDir(s.Workspace); len(entries) != 0 {
		t.Fatalf("%d entries landed from a command past its quota: %+v", len(entries), res.Changes)
	}
	if res.Changes == nil || !strings.Contains(res.Changes.Failed, "quota") {
		t.Fatalf("the result does not say why nothing landed: %+v", res.Changes)
	}
}

// TestAFailedStepTakesTheWholeApplyBack: a step the file system refuses midway —
// the workspace's disk full — fails the apply, and every step before it is taken
// back: the workspace is byte for byte as it was, and the result says why.
func TestAFailedStepTakesTheWholeApplyBack(t *testing.T) {
	t.Parallel()
	s := tmpfsSpecOf(t, "size=1m,nr_inodes=4k")
	for i := range 100 {
		os.WriteFile(filepath.Join(s.Workspace, fmt.Sprintf("f%03d", i)), []byte(strings.Repeat("b", 4096)), 0o644)
	}
	os.MkdirAll(filepath.Join(s.Workspace, "gone"), 0o755)
	os.WriteFile(filepath.Join(s.Workspace, "gone", "x"), []byte("before"), 0o644)
	os.WriteFile(filepath.Join(s.Workspace, "zzz"), []byte("a file, made a directory by steps after the one that fails"), 0o644)
	before := digest(t, s.Workspace)
	res := run(t, s, "rm -rf gone; for f in f*; do head -c 4096 /dev/zero > $f; done; head -c 600000 /dev/zero > zz-big; rm zzz; mkdir zzz; echo y > zzz/c")
	if got := digest(t, s.Workspace); got != before {
		t.Fatalf("the workspace changed though the apply failed: %+v", res.Changes)
	}
	if res.Changes == nil || !strings.Contains(res.Changes.Failed, "no space left") || res.ExitCode == 0 {
		t.Fatalf("the result does not say the apply failed: %+v %+v", res, res.Changes)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Workspace, ".turnlog")); len(entries) != 0 {
		t.Fatalf("the failed apply left %d entries in .turnlog", len(entries))
	}
}

// TestAHostMountIsNeverMoved: a directory the host mounted something on in the
// workspace — which the command saw as the empty directory beneath — is not the
// command's to remove or change: refused, the mount stays where it is.
func TestAHostMountIsNeverMoved(t *testing.T) {
	t.Parallel()
	s, outside := spec(t)
	mnt := filepath.Join(s.Workspace, "mnt")
	os.MkdirAll(mnt, 0o755)
	if err := unix.Mount(outside, mnt, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	res := run(t, s, "rm -rf mnt; mkdir -p other && echo x > other/y")
	if raw, err := os.ReadFile(filepath.Join(mnt, "secret.txt")); err != nil || string(raw) != "outside secret" {
		t.Fatalf("the mount moved: %v %+v", err, res.Changes)
	}
	if c := res.Changes; c == nil || c.RefusedCount != 1 || c.Refused[0].Path != "mnt" {
		t.Fatalf("refusals: %+v", c)
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, "other", "y")); string(raw) != "x\n" {
		t.Fatalf("the command's other change did not land")
	}
}

// digest sums up a workspace byte for byte: every path (turnlog's own .turnlog left
// out), its type, mode, content or link target.
func digest(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	n := 0
	buf := make([]byte, 64<<10)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".turnlog" {
			return filepath.SkipDir
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		n++
		fmt.Fprintf(h, "%s %o ", rel, st.Mode)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			for {
				k, err := unix.Read(fd, buf)
				if err != nil || k == 0 {
					break
				}
				h.Write(buf[:k])
			}
			unix.Close(fd)
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			h.Write([]byte(target))
		}
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d entries, %x", n, h.Sum(nil))
}

// TestAWorkspaceHasACap: what a workspace holds in all is capped too — in entries
// and in bytes: an apply that would grow it past its cap lands nothing, one that
// stays within lands.
func TestAWorkspaceHasACap(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	for i := range 90 {
		os.WriteFile(filepath.Join(s.Workspace, fmt.Sprintf("f%02d", i)), []byte("x"), 0o644)
	}
	s.WorkspaceEntries, s.WorkspaceBytes = 100, 64<<20
	res := run(t, s, "for i in $(seq 1 20); do echo y > new$i; done")
	if _, err := os.Stat(filepath.Join(s.Workspace, "new1")); err == nil || res.Changes == nil || !strings.Contains(res.Changes.Failed, "past its cap of 100") {
		t.Fatalf("an apply past the workspace's cap of entries landed: %+v", res.Changes)
	}
	res = run(t, s, "head -c 70000000 /dev/urandom > big")
	if _, err := os.Stat(filepath.Join(s.Workspace, "big")); err == nil || res.Changes == nil || !strings.Contains(res.Changes.Failed, "bytes, past its cap") {
		t.Fatalf("an apply past the workspace's cap of bytes landed: %+v", res.Changes)
	}
	if res := run(t, s, "for i in $(seq 1 5); do echo y > new$i; done; rm f00"); res.Changes == nil || res.Changes.Failed != "" {
		t.Fatalf("an apply within the cap: %+v", res.Changes)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace, "new5")); err != nil {
		t.Fatal("an apply within the cap did not land")
	}
}

// TestATimeoutNeverCutsAnApplyShort: a command killed by its timeout has what it
// wrote applied whole, however long the apply takes — here longer than the grace a
// stopped command's helper is given to end it.
func TestATimeoutNeverCutsAnApplyShort(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.Timeout = time.Second
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	res := run(t, sandbox.WithPause(s, w, "0/1+12s"), "for i in $(seq 1 50); do echo $i > f$i; done; sleep 60")
	if !res.TimedOut {
		t.Fatalf("the command was not stopped by its timeout: %+v", res)
	}
	for i := 1; i <= 50; i++ {
		if raw, err := os.ReadFile(filepath.Join(s.Workspace, fmt.Sprintf("f%d", i))); err != nil || string(raw) != fmt.Sprintf("%d\n", i) {
			t.Fatalf("f%d: %q %v (%+v)", i, raw, err, res.Changes)
		}
	}
}

// TestARollbackNeverUndoesALaterChange: an apply kept for its result that is then
// taken back (its result never reached the log) puts back what it replaced only
// where nothing changed since: a later command's change of the same file stays,
// and what the first replaced there is kept aside in .turnlog/left-<id>.
func TestARollbackNeverUndoesALaterChange(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	os.WriteFile(filepath.Join(s.Workspace, "f"), []byte("original\n"), 0o644)
	os.WriteFile(filepath.Join(s.Workspace, "g"), []byte("original\n"), 0o644)
	first := s
	first.SettleLater = true
	a := run(t, first, "echo first > f; echo first > g")
	run(t, s, "echo second > f")
	if err := a.Settle(false); err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, "f")); string(raw) != "second\n" {
		t.Fatalf("taking the first apply back undid the second's change: f is %q", raw)
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, "g")); string(raw) != "original\n" {
		t.Fatalf("g was not taken back: %q", raw)
	}
	left, _ := filepath.Glob(filepath.Join(s.Workspace, ".turnlog", "left-*"))
	if len(left) != 1 {
		t.Fatalf("what could not be put back was not kept: %v", left)
	}
	found := false
	filepath.WalkDir(left[0], func(p string, d fs.DirEntry, err error) error {
		if raw, _ := os.ReadFile(p); err == nil && !d.IsDir() && string(raw) == "original\n" {
			found = true
		}
		return nil
	})
	if !found {
		t.Fatalf("f's original content is not in %s", left[0])
	}
}
