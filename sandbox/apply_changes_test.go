package sandbox_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/turnlog/turnlog/sandbox"
	"golang.org/x/sys/unix"
)

// TestAnApplySaysWhatEachPathWasAndIs: a real command removes a tree (a file of
// its own mode, owner and time, a symlink, an empty directory), edits a file in
// place and makes one; what the apply reports of each path — before and after, and
// the contents of both — is exactly what was there and what is.
func TestAnApplySaysWhatEachPathWasAndIs(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.SettleLater = true
	ws := s.Workspace
	old := time.Date(2020, 3, 4, 5, 6, 7, 891011000, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "src/empty"), 0o755))
	must(os.Chmod(filepath.Join(ws, "src/empty"), 0o750))
	must(os.WriteFile(filepath.Join(ws, "src/a.go"), []byte("package a\n"), 0o640))
	must(os.Chown(filepath.Join(ws, "src/a.go"), 1234, 5678))
	must(os.Chtimes(filepath.Join(ws, "src/a.go"), old, old))
	must(os.Symlink("a.go", filepath.Join(ws, "src/link")))
	must(os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("one\n"), 0o644))
	must(os.Chtimes(filepath.Join(ws, "src/empty"), old, old))
	must(os.Chtimes(filepath.Join(ws, "src"), old, old))

	res := run(t, s, `rm -rf src && sed -i s/one/two/ notes.txt && echo new > made.txt`)
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	defer res.Settle(true)
	type seen struct {
		before, after *sandbox.EntryState
		was, is       string
		isHash        string // as the apply hashed it
	}
	got := map[string]seen{}
	var order []string
	err := res.FileChanges(func(cs []sandbox.FileChange) error {
		for _, c := range cs {
			if c.Moved {
				return fmt.Errorf("%s: moved, though nothing changed it", c.Path)
			}
			s := seen{before: c.Before, after: c.After, isHash: c.AfterHash}
			if c.Before != nil && c.Before.Kind == sandbox.EntryFile {
				s.was = read(t, c.OpenBefore)
			}
			if c.After != nil && c.After.Kind == sandbox.EntryFile {
				s.is = read(t, c.OpenAfter)
			}
			got[c.Path] = s
			order = append(order, c.Path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	oldNs := old.UnixNano()
	want := map[string]sandbox.EntryState{
		"src":       {Kind: sandbox.EntryDir, Mode: 0o755, MtimeNs: oldNs},
		"src/empty": {Kind: sandbox.EntryDir, Mode: 0o750, MtimeNs: oldNs},
		"src/a.go":  {Kind: sandbox.EntryFile, Mode: 0o640, UID: 1234, GID: 5678, MtimeNs: oldNs, Size: 10},
	}
	for p, w := range want {
		g, ok := got[p]
		if !ok || g.before == nil || *g.before != w || g.after != nil {
			t.Errorf("%s: before %+v after %+v, want before %+v and nothing after", p, g.before, g.after, w)
		}
	}
	if g := got["src/a.go"]; g.was != "package a\n" {
		t.Errorf("src/a.go held %q before", g.was)
	}
	if g := got["src/link"]; g.before == nil || g.before.Kind != sandbox.EntrySymlink || g.before.Target != "a.go" || g.after != nil {
		t.Errorf("src/link: %+v %+v", g.before, g.after)
	}
	if g := got["notes.txt"]; g.before == nil || g.after == nil || g.was != "one\n" || g.is != "two\n" || g.before.Mode != 0o644 || g.after.Size != 4 {
		t.Errorf("notes.txt: %+v → %+v, %q → %q", g.before, g.after, g.was, g.is)
	}
	if g := got["made.txt"]; g.before != nil || g.after == nil || g.is != "new\n" {
		t.Errorf("made.txt: %+v → %+v %q", g.before, g.after, g.is)
	}
	for _, p := range []string{"notes.txt", "made.txt"} { // named as the apply copied them: not read again
		if g := got[p]; g.isHash != sha256Of(g.is) {
			t.Errorf("%s: the apply says it holds %q, it holds %s", p, g.isHash, sha256Of(g.is))
		}
	}
	if fmt.Sprint(order) != "[made.txt notes.txt src src/a.go src/empty src/link]" {
		t.Errorf("changes in the plan's order, a removed tree's top first: %q", order)
	}
	if err := res.Settle(true); err != nil {
		t.Fatal(err)
	}
	if err := res.FileChanges(func([]sandbox.FileChange) error { return nil }); err == nil {
		t.Error("what a settled apply replaced was read")
	}
}

// TestAChangeMadeAfterTheApplyIsNoticed: a path another writer replaced between the
// apply and the reading is marked moved: what is there is not the command's.
func TestAChangeMadeAfterTheApplyIsNoticed(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.SettleLater = true
	res := run(t, s, `echo mine > f.txt`)
	defer res.Settle(true)
	p := filepath.Join(s.Workspace, "f.txt")
	if err := os.WriteFile(p+".new", []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	err := res.FileChanges(func(cs []sandbox.FileChange) error {
		if len(cs) != 1 || cs[0].Path != "f.txt" || !cs[0].Moved || cs[0].AfterHash != "" {
			return fmt.Errorf("changes: %+v", cs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAFileWrittenInPlaceAfterTheApplyIsReadAgain: a writer that changes the file
// the apply placed, in place (the same inode), leaves it not named by the hash the
// apply took as it copied it: what is there is read.
func TestAFileWrittenInPlaceAfterTheApplyIsReadAgain(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.SettleLater = true
	res := run(t, s, `echo mine > f.txt`)
	defer res.Settle(true)
	f, err := os.OpenFile(filepath.Join(s.Workspace, "f.txt"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("and theirs\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	err = res.FileChanges(func(cs []sandbox.FileChange) error {
		if len(cs) != 1 || cs[0].Path != "f.txt" || cs[0].AfterHash != "" {
			return fmt.Errorf("changes: %+v", cs)
		}
		if got := read(t, cs[0].OpenAfter); got != "mine\nand theirs\n" {
			return fmt.Errorf("read %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func read(t testing.TB, open func() (io.ReadCloser, error)) string {
	t.Helper()
	f, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestWhatACommandReadStaysCachedUntilItsApplyIsSettled: the command's cgroup, whose
// page cache holds what the command read, is reclaimed only once its apply is
// settled, so the undo log reads what the apply replaced from memory, not the disk.
// The file is first dropped from the cache, so that the command's read is charged
// to the command's group.
func TestWhatACommandReadStaysCachedUntilItsApplyIsSettled(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.SettleLater = true
	p := filepath.Join(s.Workspace, "f.txt")
	content := make([]byte, 1<<20)
	for i := range content {
		content[i] = byte('a' + i%26)
	}
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if n := resident(t, f); n != 0 {
		t.Skipf("the file system keeps %d pages of a file asked to drop them", n)
	}
	f.Close()
	res := run(t, s, `cat f.txt > /dev/null && echo new > f.txt`)
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	defer res.Settle(true)
	sandbox.WaitForGroups()
	staged, err := filepath.Glob(filepath.Join(s.Workspace, ".turnlog", "apply-*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, name := range staged {
		g, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := g.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(content)) {
			found = true
			if n, all := resident(t, g), len(content)/os.Getpagesize(); n < all {
				t.Errorf("%d of the %d pages the command read of what its apply replaced are left in memory", n, all)
			}
		}
		g.Close()
	}
	if !found {
		t.Fatalf("what the apply replaced is not among %q", staged)
	}
}

// resident counts the pages of f in the page cache.
func resident(t *testing.T, f *os.File) int {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
