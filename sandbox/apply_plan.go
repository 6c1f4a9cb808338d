package sandbox

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// The apply of a command's writes is decided here, then carried out by the executor
// (apply_exec.go), which decides nothing. makePlan is a pure function of two
// snapshots — the upper layer's entries, with the overlay's whiteouts and opaque
// directories, and the workspace's entries the executor read under the workspace's
// lock — and decides every change and every refusal once. Refusals are only the
// rule-based ones (git internals, a new repository, special files, turnlog's own
// directory, a path changed in the workspace since the command started); the modes
// it lowers it applies and reports. Anything else that stands in the way (the quota,
// a path too deep) fails the whole plan: nothing of it lands.

// kind is what an entry is.
type kind uint8

const (
	kindNone kind = iota
	kindDir
	kindFile
	kindSymlink
	kindWhiteout // the overlay's mark of a deleted entry
	kindSpecial  // a device, fifo or socket
)

// upperEntry is what the command left at one path of its write layer.
type upperEntry struct {
	name     string
	kind     kind
	mode     uint32 // permission, set-id and sticky bits
	opaque   bool   // a directory that replaced the workspace's (rm -rf d && mkdir d)
	size     int64
	data     int64 // bytes of content, holes left out
	nlink    uint32
	target   string // a symlink's
	mtime    unix.Timespec
	children []*upperEntry // a directory's, sorted by name
}

// wsEntry is one entry of the workspace as the executor read it.
type wsEntry struct {
	name     string
	kind     kind
	mode     uint32
	uid, gid uint32
	ino      uint64
	ctime    unix.Timespec
	mtime    unix.Timespec
	bytes    int64               // what it holds on the disk (blocks)
	children map[string]*wsEntry // what was read of a directory
	listed   bool                // children is the whole directory
	mount    bool                // a mount of the host's sits here
}

func (u *upperEntry) child(name string) *upperEntry {
	i := sort.Search(len(u.children), func(i int) bool { return u.children[i].name >= name })
	if i < len(u.children) && u.children[i].name == name {
		return u.children[i]
	}
	return nil
}

// childFold is the child whose name equals name but for case (git's names on a
// file system that folds case), an exact match first.
func (u *upperEntry) childFold(name string) *upperEntry {
	if c := u.child(name); c != nil {
		return c
	}
	for _, c := range u.children {
		if strings.EqualFold(c.name, name) {
			return c
		}
	}
	return nil
}

func (w *wsEntry) child(name string) *wsEntry {
	if w == nil || w.children == nil {
		return nil
	}
	return w.children[name]
}

// opKind is one step of a plan.
type opKind uint8

const (
	// opRemove moves the workspace's entry, with all below it, into the staging
	// directory (a rollback moves it back).
	opRemove  opKind = iota + 1
	opMkdir          // a new directory
	opPut            // a file's content from the upper layer, through a temporary
	opSymlink        // a symlink, through a temporary
	opChmod          // an existing directory's mode
	opTimes          // a directory's modification time, once its contents are in place
)

// op is one step, as the journal holds it. Old* describe the entry it replaces or
// changes, by which a rollback knows it.
type op struct {
	Kind     opKind `json:"k"`
	Rel      string `json:"p"`
	Mode     uint32 `json:"m,omitempty"`
	UID      uint32 `json:"u,omitempty"`
	GID      uint32 `json:"g,omitempty"`
	Target   string `json:"t,omitempty"`
	MtimeSec int64  `json:"ts,omitempty"`
	MtimeNs  int64  `json:"tn,omitempty"`
	Size     int64  `json:"s,omitempty"`
	Sparse   bool   `json:"h,omitempty"` // the content has holes to keep
	OldIno   uint64 `json:"oi,omitempty"`
	OldKind  kind   `json:"ok,omitempty"`
	OldMode  uint32 `json:"om,omitempty"`
	OldSec   int64  `json:"os,omitempty"`
	OldNs    int64  `json:"on,omitempty"`
}

// ModeChange is a mode a command asked for that the apply lowered.
type ModeChange struct {
	Path    string `json:"path"`
	Asked   string `json:"asked"`
	Applied string `json:"applied"`
}

// planRules are what a plan is decided by, besides the snapshots.
type planRules struct {
	gitWritable bool
	// since is when the command started, on the workspace file system's clock: an
	// entry whose change time is not before it changed while the command ran. Zero:
	// nothing is checked.
	since        unix.Timespec
	writeBytes   int64 // the write quota, counted again at apply time
	writeEntries int64
}

// maxApplyDepth is the deepest a path of an apply may lie: an executor keeps a
// descriptor open for each directory above the entry it works on.
const maxApplyDepth = 1024

// plan is what an apply will do.
type plan struct {
	ops          []op
	changed      []string // the first MaxListedChanges changed paths
	count        int      // every changed path
	refused      []Refusal
	refusedCount int
	modes        []ModeChange
	modesCount   int
	// What lands: bytes of file data and entries created; what goes.
	bytes, entries               int64
	removedBytes, removedEntries int64
}

// PlanError is a plan that cannot be carried out at all: nothing of it is applied.
type PlanError struct{ Reason string }

func (e *PlanError) Error() string { return e.Reason }

type planner struct {
	rules   planRules
	ws      *wsEntry // the workspace's root
	p       *plan
	group   bool // the workspace grants its group write: applied modes may too
	kept    map[*wsEntry]bool
	tooDeep string
}

// makePlan decides the apply of upper (the write layer's root) to the workspace ws
// (its root, as read).
func makePlan(upper *upperEntry, ws *wsEntry, rules planRules) (*plan, error) {
	pl := &planner{rules: rules, ws: ws, p: &plan{}, group: ws.mode&0o020 != 0, kept: map[*wsEntry]bool{}}
	pl.dir(".", upper, ws, 0)
	if pl.tooDeep != "" {
		return nil, &PlanError{fmt.Sprintf("%s lies more than %d directories deep, which turnlog does not apply: nothing was applied", pl.tooDeep, maxApplyDepth)}
	}
	p := pl.p
	if rules.writeBytes > 0 && p.bytes > rules.writeBytes {
		return nil, &PlanError{fmt.Sprintf("the command's files hold %d bytes (each name of a hard link counted), past its write quota of %d: nothing was applied", p.bytes, rules.writeBytes)}
	}
	if rules.writeEntries > 0 && p.entries > rules.writeEntries {
		return nil, &PlanError{fmt.Sprintf("the command made %d files, directories and links, past its quota of %d entries: nothing was applied", p.entries, rules.writeEntries)}
	}
	return p, nil
}

// grows says whether the plan leaves the workspace holding more, in bytes or in
// entries, than it does.
func (p *plan) grows() bool { return p.bytes > p.removedBytes || p.entries > p.removedEntries }

// checkWorkspaceCaps refuses a plan that grows a workspace holding usedBytes and
// usedEntries past its caps (0: none).
func checkWorkspaceCaps(p *plan, usedBytes, usedEntries, capBytes, capEntries int64) error {
	if b := usedBytes + p.bytes - p.removedBytes; capBytes > 0 && p.bytes > p.removedBytes && b > capBytes {
		return &PlanError{fmt.Sprintf("the workspace would hold %d bytes, past its cap of %d: nothing was applied", b, capBytes)}
	}
	if n := usedEntries + p.entries - p.removedEntries; capEntries > 0 && p.entries > p.removedEntries && n > capEntries {
		return &PlanError{fmt.Sprintf("the workspace would hold %d entries, past its cap of %d: nothing was applied", n, capEntries)}
	}
	return nil
}

func (pl *planner) change(rel string) {
	pl.p.count++
	if len(pl.p.changed) < MaxListedChanges {
		pl.p.changed = append(pl.p.changed, rel)
	}
}

func (pl *planner) refuse(rel, why string) {
	pl.p.refusedCount++
	if len(pl.p.refused) < MaxListedChanges {
		pl.p.refused = append(pl.p.refused, Refusal{Path: rel, Reason: why})
	}
}

// dir plans the upper directory up at rel, whose workspace counterpart is cur (a
// directory, or nil when there is none or it is being replaced).
func (pl *planner) dir(rel string, up *upperEntry, cur *wsEntry, depth int) {
	if depth > maxApplyDepth {
		if pl.tooDeep == "" {
			pl.tooDeep = rel
		}
		return
	}
	if up.opaque && cur != nil {
		for _, name := range sortedNames(cur.children) {
			if up.child(name) == nil {
				pl.remove(join(rel, name), cur.children[name])
			}
		}
	}
	inGit, _ := insideGit(rel)
	repository := !inGit && looksLikeRepository(func(name string) kind {
		if c := up.childFold(name); c != nil {
			if c.kind == kindWhiteout {
				return kindNone
			}
			return c.kind
		}
		if cur == nil || up.opaque {
			return kindNone
		}
		if w := cur.child(name); w != nil {
			return w.kind
		}
		return kindNone
	})
	for _, c := range up.children {
		r := join(rel, c.name)
		switch {
		case rel == "." && c.name == stagingDirName:
			pl.refuse(r, refusedOwn)
		case repository && gitDirNames[strings.ToLower(c.name)]:
			pl.refuse(r, refusedNewRepo)
		default:
			pl.entry(r, c, cur.child(c.name), depth+1)
		}
	}
}

// entry plans one upper entry at rel over the workspace's entry cur (nil: none).
func (pl *planner) entry(rel string, up *upperEntry, cur *wsEntry, depth int) {
	if why := pl.guard(rel, up.kind == kindDir); why != "" {
		pl.refuse(rel, why)
		return
	}
	if cur != nil && cur.mount {
		pl.refuse(rel, refusedMount)
		return
	}
	if cur != nil && cur.kind != kindDir && up.kind != kindWhiteout && pl.changedSince(cur) {
		pl.refuse(rel, refusedChanged)
		return
	}
	if cur != nil && cur.kind == kindDir && (up.kind == kindFile || up.kind == kindSymlink) && pl.keptBelow(rel, cur) {
		// The directory it replaces holds what must stay: the whole change is refused.
		pl.refuse(rel, refusedHoldsKept)
		return
	}
	switch up.kind {
	case kindWhiteout:
		if cur != nil {
			pl.remove(rel, cur)
		}
	case kindDir:
		if cur != nil && cur.kind == kindDir {
			if mode := pl.mode(rel, up.mode, true, cur); mode != cur.mode {
				pl.p.ops = append(pl.p.ops, op{Kind: opChmod, Rel: rel, Mode: mode, OldIno: cur.ino, OldMode: cur.mode})
				pl.change(rel)
			}
			pl.dir(rel, up, cur, depth)
			pl.times(rel, up, cur)
			return
		}
		if cur != nil && !pl.remove(rel, cur) {
			return // what is there stays (refused): nothing can take its place
		}
		pl.p.ops = append(pl.p.ops, op{Kind: opMkdir, Rel: rel, Mode: pl.mode(rel, up.mode, true, nil), UID: pl.ws.uid, GID: pl.ws.gid})
		pl.p.entries++
		pl.change(rel)
		pl.dir(rel, up, nil, depth)
		pl.times(rel, up, nil)
	case kindFile, kindSymlink:
		o := op{Kind: opPut, Rel: rel, UID: pl.ws.uid, GID: pl.ws.gid, MtimeSec: up.mtime.Sec, MtimeNs: up.mtime.Nsec}
		if up.kind == kindSymlink {
			o.Kind, o.Target = opSymlink, up.target
		} else {
			o.Mode, o.Size, o.Sparse = pl.mode(rel, up.mode, false, cur), up.size, up.data < up.size
			pl.p.bytes += up.data
		}
		switch {
		case cur != nil && cur.kind == kindDir:
			if !pl.remove(rel, cur) {
				return
			}
		case cur != nil:
			o.OldIno, o.OldKind, o.OldMode, o.UID, o.GID = cur.ino, cur.kind, cur.mode, cur.uid, cur.gid
			pl.p.removedBytes += cur.bytes
			pl.p.removedEntries++
		}
		pl.p.ops = append(pl.p.ops, o)
		pl.p.entries++
		pl.change(rel)
	default:
		pl.refuse(rel, refusedSpecial)
	}
}

// times sets a directory's modification time once everything in it is in place
// (nothing later in the plan changes its entries).
func (pl *planner) times(rel string, up *upperEntry, cur *wsEntry) {
	o := op{Kind: opTimes, Rel: rel, MtimeSec: up.mtime.Sec, MtimeNs: up.mtime.Nsec}
	if cur != nil {
		o.OldIno, o.OldSec, o.OldNs = cur.ino, cur.mtime.Sec, cur.mtime.Nsec
	}
	pl.p.ops = append(pl.p.ops, o)
}

// remove plans the removal of the workspace's entry at rel and all below it, but for
// what must stay (and the directories that hold it). It says whether rel itself
// goes.
func (pl *planner) remove(rel string, e *wsEntry) bool {
	if why := pl.keepReason(rel, e); why != "" {
		pl.refuse(rel, why)
		return false
	}
	if e.kind == kindDir && pl.keptBelow(rel, e) {
		for _, name := range sortedNames(e.children) {
			pl.remove(join(rel, name), e.children[name])
		}
		return false
	}
	pl.p.ops = append(pl.p.ops, op{Kind: opRemove, Rel: rel, OldIno: e.ino, OldKind: e.kind, OldMode: e.mode})
	pl.removed(rel, e)
	return true
}

// removed counts every path of a removed tree.
func (pl *planner) removed(rel string, e *wsEntry) {
	pl.change(rel)
	pl.p.removedBytes += e.bytes
	pl.p.removedEntries++
	for _, name := range sortedNames(e.children) {
		pl.removed(join(rel, name), e.children[name])
	}
}

// keepReason says why the workspace's entry at rel may not be removed by a command,
// or "": it changed since the command started, it is a repository's .git, turnlog's
// own directory, or on the default-deny list (a command never saw it).
func (pl *planner) keepReason(rel string, e *wsEntry) string {
	switch {
	case rel == stagingDirName:
		return refusedOwn
	case e.mount:
		return refusedMount
	case e.kind != kindDir && pl.changedSince(e):
		return refusedChanged
	case strings.EqualFold(path.Base(rel), ".git"):
		return refusedGitInternals
	case denied(rel) != "":
		return "not removed: it " + denied(rel)
	}
	return ""
}

// keptBelow says whether anything below the workspace directory e must stay.
func (pl *planner) keptBelow(rel string, e *wsEntry) bool {
	if k, ok := pl.kept[e]; ok {
		return k
	}
	k := false
	for _, name := range sortedNames(e.children) {
		c, r := e.children[name], join(rel, name)
		if pl.keepReason(r, c) != "" || c.kind == kindDir && pl.keptBelow(r, c) {
			k = true
			break
		}
	}
	pl.kept[e] = k
	return k
}

// changedSince says whether the workspace's entry changed after the command started.
func (pl *planner) changedSince(e *wsEntry) bool {
	s := pl.rules.since
	if s.Sec == 0 && s.Nsec == 0 {
		return false
	}
	return e.ctime.Sec > s.Sec || e.ctime.Sec == s.Sec && e.ctime.Nsec >= s.Nsec
}

// mode is the mode an entry gets for the mode the command left it with: never
// writable by others, by the group only where the workspace's own directory is, no
// setuid or setgid bit, a sticky bit kept on a directory. A mode the command did not
// change (cur's, the entry it replaces) is kept but for the set-id bits. A lowered
// mode is reported.
func (pl *planner) mode(rel string, asked uint32, dir bool, cur *wsEntry) uint32 {
	asked &= 0o7777
	m := asked &^ 0o6000
	if cur == nil || cur.mode != asked || (cur.kind == kindDir) != dir {
		m &^= 0o002
		if !pl.group {
			m &^= 0o020
		}
		if !dir {
			m &^= 0o1000
		}
	}
	if m != asked {
		pl.p.modesCount++
		if len(pl.p.modes) < MaxListedChanges {
			pl.p.modes = append(pl.p.modes, ModeChange{Path: rel, Asked: fmt.Sprintf("%04o", asked), Applied: fmt.Sprintf("%04o", m)})
		}
	}
	return m
}

// guard says why a change at rel (to a directory, when dir) may not be applied: it
// lies in a .git (with gitWritable, in what of it git reads as configuration or
// code), or it makes a .git where none was.
func (pl *planner) guard(rel string, dir bool) string {
	if !strings.Contains(strings.ToLower(rel), ".git") {
		return ""
	}
	parts := strings.Split(rel, "/")
	at := pl.ws
	for i, p := range parts {
		at = at.child(p)
		if !strings.EqualFold(p, ".git") {
			continue
		}
		switch {
		case at == nil:
			return refusedNewRepo
		case pl.rules.gitWritable && at.kind == kindDir && i == len(parts)-1 && dir:
			continue // the repository's directory itself, kept a directory
		case pl.rules.gitWritable && at.kind == kindDir && i < len(parts)-1 && !gitProtected(strings.Join(parts[i+1:], "/")):
			continue // a git write the policy allows (a nested .git below is checked too)
		}
		return refusedGitInternals
	}
	return ""
}

// looksLikeRepository is git's own test of a directory, by what kindOf says its
// entries would be: a HEAD, and objects and refs directories (symlinks count: git
// follows them) or a commondir file naming where they are.
func looksLikeRepository(kindOf func(name string) kind) bool {
	file := func(k kind) bool { return k != kindNone && k != kindDir && k != kindWhiteout }
	dir := func(k kind) bool { return k == kindDir || k == kindSymlink }
	return file(kindOf("HEAD")) && (dir(kindOf("objects")) && dir(kindOf("refs")) || file(kindOf("commondir")))
}

// gitDirNames are what makes a directory a repository to git, or configures one.
var gitDirNames = map[string]bool{"head": true, "objects": true, "refs": true, "config": true, "config.worktree": true, "commondir": true,
	"gitdir": true, "packed-refs": true, "hooks": true, "info": true, "worktrees": true, "modules": true, "index": true}

func join(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

func sortedNames(m map[string]*wsEntry) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
