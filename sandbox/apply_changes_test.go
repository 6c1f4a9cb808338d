package sandbox_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
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
	}
	got := map[string]seen{}
	var order []string
	err := res.FileChanges(func(cs []sandbox.FileChange) error {
		for _, c := range cs {
			if c.Moved {
				return fmt.Errorf("%s: moved, though nothing changed it", c.Path)
			}
			s := seen{before: c.Before, after: c.After}
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
		if len(cs) != 1 || cs[0].Path != "f.txt" || !cs[0].Moved {
			return fmt.Errorf("changes: %+v", cs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, open func() (*os.File, error)) string {
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
