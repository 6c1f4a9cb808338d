package sandbox

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The plan is a pure function of two snapshots: these tests build both in memory.

// upperTree builds an upper layer from "path kind" lines: kinds d (directory), D
// (opaque directory), f (file; "f:N" holds N bytes), l (symlink), w (whiteout), c (a
// device); "@0777" after the kind sets the mode.
func upperTree(lines ...string) *upperEntry {
	root := &upperEntry{name: ".", kind: kindDir, mode: 0o755}
	for _, line := range lines {
		p, spec, _ := strings.Cut(line, " ")
		spec, modeText, _ := strings.Cut(spec, "@")
		spec, size, _ := strings.Cut(spec, ":")
		e := &upperEntry{mode: 0o644, mtime: unix.Timespec{Sec: 1000}}
		switch spec {
		case "d", "D":
			e.kind, e.mode, e.opaque = kindDir, 0o755, spec == "D"
		case "f":
			e.kind = kindFile
			fmt.Sscan(size, &e.size)
			e.data = e.size
		case "l":
			e.kind, e.target = kindSymlink, "target"
		case "w":
			e.kind = kindWhiteout
		case "c":
			e.kind = kindSpecial
		}
		if modeText != "" {
			fmt.Sscanf(modeText, "%o", &e.mode)
		}
		parent := root
		parts := strings.Split(p, "/")
		for _, dir := range parts[:len(parts)-1] {
			c := parent.child(dir)
			if c == nil {
				c = &upperEntry{name: dir, kind: kindDir, mode: 0o755}
				parent.children = append(parent.children, c)
				sortUpper(parent)
			}
			parent = c
		}
		e.name = parts[len(parts)-1]
		if old := parent.child(e.name); old != nil {
			*old = *e
			continue
		}
		parent.children = append(parent.children, e)
		sortUpper(parent)
	}
	return root
}

func sortUpper(e *upperEntry) {
	sort.Slice(e.children, func(i, j int) bool { return e.children[i].name < e.children[j].name })
}

// wsTree builds a workspace from "path kind" lines (d, f, l; "!" after the kind:
// changed since the command started); every directory is read whole.
func wsTree(lines ...string) *wsEntry {
	ino := uint64(100)
	root := &wsEntry{name: ".", kind: kindDir, mode: 0o755, uid: 1000, gid: 1000, ino: 1, children: map[string]*wsEntry{}, listed: true}
	for _, line := range lines {
		p, spec, _ := strings.Cut(line, " ")
		changed := strings.HasSuffix(spec, "!")
		spec = strings.TrimSuffix(spec, "!")
		spec, modeText, _ := strings.Cut(spec, "@")
		ino++
		e := &wsEntry{mode: 0o644, uid: 1000, gid: 1000, ino: ino, bytes: 4096, ctime: unix.Timespec{Sec: 10}}
		if changed {
			e.ctime = unix.Timespec{Sec: 99}
		}
		switch spec {
		case "d":
			e.kind, e.mode, e.children, e.listed = kindDir, 0o755, map[string]*wsEntry{}, true
		case "f":
			e.kind = kindFile
		case "l":
			e.kind = kindSymlink
		}
		if modeText != "" {
			fmt.Sscanf(modeText, "%o", &e.mode)
		}
		parent := root
		parts := strings.Split(p, "/")
		for _, dir := range parts[:len(parts)-1] {
			c := parent.children[dir]
			if c == nil {
				ino++
				c = &wsEntry{name: dir, kind: kindDir, mode: 0o755, ino: ino, children: map[string]*wsEntry{}, listed: true, ctime: unix.Timespec{Sec: 10}}
				parent.children[dir] = c
			}
			parent = c
		}
		e.name = parts[len(parts)-1]
		parent.children[e.name] = e
	}
	return root
}

var since = unix.Timespec{Sec: 50}

func mustPlan(t *testing.T, up *upperEntry, ws *wsEntry, r planRules) *plan {
	t.Helper()
	p, err := makePlan(up, ws, r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// steps renders a plan's ops as "kind path" lines (times left out).
func steps(p *plan) string {
	names := map[opKind]string{opRemove: "remove", opMkdir: "mkdir", opPut: "put", opSymlink: "symlink", opChmod: "chmod"}
	var out []string
	for _, o := range p.ops {
		if o.Kind == opTimes {
			continue
		}
		s := names[o.Kind] + " " + o.Rel
		if o.OldIno != 0 && o.Kind != opRemove {
			s += " (replacing)"
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

func refusedPaths(p *plan) string {
	var out []string
	for _, r := range p.refused {
		out = append(out, r.Path)
	}
	return strings.Join(out, " ")
}

func TestAPlanCreatesReplacesAndRemoves(t *testing.T) {
	t.Parallel()
	up := upperTree("new d", "new/a f:3", "keep.txt f:1", "gone w", "tree w", "link l", "fifo c")
	ws := wsTree("keep.txt f", "gone f", "tree/a/b f", "tree/a/c f", "tree/d f")
	p := mustPlan(t, up, ws, planRules{since: since})
	want := "remove gone\nput keep.txt (replacing)\nsymlink link\nmkdir new\nput new/a\nremove tree"
	if got := steps(p); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	// Every path of the removed tree counts, and is listed.
	if p.count != 10 || !strings.Contains(strings.Join(p.changed, " "), "tree/a/b") {
		t.Fatalf("count %d, changed %v", p.count, p.changed)
	}
	if refusedPaths(p) != "fifo" || p.refusedCount != 1 {
		t.Fatalf("refused %v", p.refused)
	}
	if p.bytes != 4 || p.entries != 4 {
		t.Fatalf("bytes %d entries %d", p.bytes, p.entries)
	}
	for _, o := range p.ops {
		if o.Kind == opPut && o.Rel == "new/a" && (o.UID != 1000 || o.GID != 1000) {
			t.Fatalf("a new file is not the workspace owner's: %+v", o)
		}
	}
}

func TestAnOpaqueDirectoryDropsWhatItDoesNotHold(t *testing.T) {
	t.Parallel()
	up := upperTree("data D", "data/new1 f", "data/new2 f")
	ws := wsTree("data/old1 f", "data/old2 f", "data/new1 f", "data/sub/x f")
	p := mustPlan(t, up, ws, planRules{since: since})
	want := "remove data/old1\nremove data/old2\nremove data/sub\nput data/new1 (replacing)\nput data/new2"
	if got := steps(p); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
}

// TestChangesMadeSinceTheCommandStartedAreNeverOverwritten: a path changed in the
// workspace while the command ran, that the command changed too, is refused — and a
// removed tree keeps what changed in it, with the directories holding it.
func TestChangesMadeSinceTheCommandStartedAreNeverOverwritten(t *testing.T) {
	t.Parallel()
	up := upperTree("a.txt f", "b.txt f", "tree w", "data D", "data/x f", "dir f")
	ws := wsTree("a.txt f!", "b.txt f", "tree/old f", "tree/sub/new f!", "tree/sub/old f", "data/x f", "data/host f!", "dir/inner f!")
	p := mustPlan(t, up, ws, planRules{since: since})
	for _, r := range []string{"a.txt", "tree/sub/new", "data/host", "dir"} {
		if !strings.Contains(" "+refusedPaths(p)+" ", " "+r+" ") {
			t.Errorf("%s was not refused: %v", r, p.refused)
		}
	}
	want := "put b.txt (replacing)\nput data/x (replacing)\nremove tree/old\nremove tree/sub/old"
	if got := steps(p); got != want {
		t.Fatalf("steps:\n%s\nwant:\n%s", got, want)
	}
	// Without a start time nothing counts as changed since.
	if p := mustPlan(t, up, ws, planRules{}); p.refusedCount != 0 {
		t.Fatalf("refused without a start time: %v", p.refused)
	}
}

// TestARepositoryIsJudgedOnTheStateTheApplyLeaves: half a repository in the
// workspace and the other half from the command make one, which is refused — either
// way round, and for a bare one, a .git under another name or a commondir file.
func TestARepositoryIsJudgedOnTheStateTheApplyLeaves(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		up    []string
		ws    []string
		wantR string
	}{
		{"objects after HEAD, config and refs", []string{"x/objects d", "x/objects/ab f"}, []string{"x/HEAD f", "x/config f", "x/refs/heads/main f"}, "x/objects"},
		{"HEAD after objects and refs", []string{"x/HEAD f", "x/config f"}, []string{"x/objects/ab f", "x/refs d"}, "x/HEAD x/config"},
		{"all at once", []string{"x/HEAD f", "x/objects d", "x/refs d"}, nil, "x/HEAD x/objects x/refs"},
		{"commondir", []string{"x/commondir f", "x/config f"}, []string{"x/HEAD f"}, "x/commondir x/config"},
		{"symlinked objects", []string{"x/objects l", "x/refs l"}, []string{"x/HEAD f"}, "x/objects x/refs"},
		{"a folded name", []string{"x/head f"}, []string{"x/objects d", "x/refs d"}, "x/head"},
	} {
		p := mustPlan(t, upperTree(c.up...), wsTree(c.ws...), planRules{})
		if got := refusedPaths(p); got != c.wantR {
			t.Errorf("%s: refused %q, want %q", c.name, got, c.wantR)
		}
	}
	// Half a repository alone is not one: applied.
	if p := mustPlan(t, upperTree("x/HEAD f", "x/refs d"), wsTree(), planRules{}); p.refusedCount != 0 {
		t.Errorf("half a repository refused: %v", p.refused)
	}
	// A repository the workspace holds keeps its git files from commands.
	if p := mustPlan(t, upperTree("x/config f", "x/description f"), wsTree("x/HEAD f", "x/objects d", "x/refs d"), planRules{}); refusedPaths(p) != "x/config" {
		t.Errorf("a change in a bare repository: refused %v, steps %s", p.refused, steps(p))
	}
}

func TestGitInternalsAreGuarded(t *testing.T) {
	t.Parallel()
	ws := wsTree(".git/HEAD f", ".git/config f", ".git/objects/ab f")
	up := upperTree(".git/config f", ".git/objects/cd f", ".git/hooks/post-checkout f", "sub/.git d", "sub/.git/HEAD f")
	if p := mustPlan(t, up, ws, planRules{}); refusedPaths(p) != ".git sub/.git" {
		t.Errorf("refused %q", refusedPaths(p))
	}
	p := mustPlan(t, up, ws, planRules{gitWritable: true})
	if got := refusedPaths(p); got != ".git/config .git/hooks sub/.git" {
		t.Errorf("with git writes: refused %q", got)
	}
	if !strings.Contains(steps(p), "put .git/objects/cd") {
		t.Errorf("a git write the policy allows was not applied: %s", steps(p))
	}
}

func TestTurnlogsOwnDirectoryIsNeverChanged(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, upperTree(".turnlog/x f", "sub/.turnlog f"), wsTree(), planRules{})
	if refusedPaths(p) != ".turnlog" || !strings.Contains(steps(p), "put sub/.turnlog") {
		t.Fatalf("refused %v, steps %s", p.refused, steps(p))
	}
	// Not removed as part of a tree either (an opaque root cannot be, but a plan is
	// a plan).
	p = mustPlan(t, upperTree("data w"), wsTree("data/.env f", "data/x f"), planRules{})
	if refusedPaths(p) != "data/.env" || steps(p) != "remove data/x" {
		t.Fatalf("a denied file in a removed tree: refused %v, steps %s", p.refused, steps(p))
	}
}

// TestModesAreNeverMadeMoreOpen: no write for others, for the group only where the
// workspace grants it, no set-id bits, a sticky directory kept sticky; every lowered
// mode is reported, a mode the command did not change is kept.
func TestModesAreNeverMadeMoreOpen(t *testing.T) {
	t.Parallel()
	up := upperTree("src d@0777", "src/Makefile f@0666", "pub d@1777", "run f@4755", "grp f@0664", "old f@0666")
	ws := wsTree("src/Makefile f", "old f@0666")
	p := mustPlan(t, up, ws, planRules{})
	modes := map[string]uint32{}
	for _, o := range p.ops {
		if o.Kind != opTimes {
			modes[o.Rel] = o.Mode
		}
	}
	for rel, want := range map[string]uint32{"src/Makefile": 0o644, "pub": 0o1755, "run": 0o755, "grp": 0o644, "old": 0o666} {
		if modes[rel] != want {
			t.Errorf("%s: mode %04o, want %04o", rel, modes[rel], want)
		}
	}
	var reported []string
	for _, m := range p.modes {
		reported = append(reported, m.Path+" "+m.Asked+"→"+m.Applied)
	}
	if got, want := strings.Join(reported, ", "), "grp 0664→0644, pub 1777→1755, run 4755→0755, src 0777→0755, src/Makefile 0666→0644"; got != want || p.modesCount != 5 {
		t.Errorf("reported %q, want %q", got, want)
	}
	// A workspace whose own directory grants its group write gives the group write.
	gws := wsTree()
	gws.mode = 0o775
	for _, o := range mustPlan(t, upperTree("grp f@0664"), gws, planRules{}).ops {
		if o.Rel == "grp" && o.Kind == opPut && o.Mode != 0o664 {
			t.Errorf("group write in a group-writable workspace: %04o", o.Mode)
		}
	}
}

func TestAPlanPastAQuotaFailsWhole(t *testing.T) {
	t.Parallel()
	up := upperTree("a f:600", "b f:600", "c d")
	var pe *PlanError
	if _, err := makePlan(up, wsTree(), planRules{writeBytes: 1000}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "write quota") {
		t.Fatalf("bytes: %v", err)
	}
	if _, err := makePlan(up, wsTree(), planRules{writeEntries: 2}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "entries") {
		t.Fatalf("entries: %v", err)
	}
	if _, err := makePlan(up, wsTree(), planRules{writeBytes: 1200, writeEntries: 3}); err != nil {
		t.Fatalf("within the quota: %v", err)
	}
	// The workspace's own caps count what it holds already, less what goes.
	p := mustPlan(t, up, wsTree(), planRules{})
	if err := checkWorkspaceCaps(p, 9000, 0, 10000, 0); !errors.As(err, &pe) {
		t.Fatalf("workspace bytes: %v", err)
	}
	if err := checkWorkspaceCaps(p, 0, 10, 0, 12); !errors.As(err, &pe) {
		t.Fatalf("workspace entries: %v", err)
	}
	same := mustPlan(t, upperTree("big w", "a f:10"), wsTree("big f"), planRules{})
	if same.grows() {
		t.Fatalf("a plan that replaces an entry with one grows: %+v", same)
	}
	if err := checkWorkspaceCaps(same, 0, 12, 0, 12); err != nil {
		t.Fatalf("a plan that does not grow the workspace: %v", err)
	}
}

func TestAPlanTooDeepFailsWhole(t *testing.T) {
	t.Parallel()
	p := strings.Repeat("d/", maxApplyDepth+1) + "f"
	var pe *PlanError
	if _, err := makePlan(upperTree(p+" f"), wsTree(), planRules{}); !errors.As(err, &pe) {
		t.Fatalf("%v", err)
	}
}
