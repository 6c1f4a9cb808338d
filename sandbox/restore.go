package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// A revert puts paths of a workspace back as they were. What each must be turnlog
// decides from its undo log; here it is carried out as an apply is — under the
// workspace's lock, a plan of steps written to a journal in a staging directory,
// then the executor — so it lands whole or is taken back (a crash in the middle
// included: the next start's recovery asks the log whether the revert's record is
// there), and what it replaced is kept until its record is durable (Result.Settle).
// Result.FileChanges says what it changed, as it does for an apply.

// Restore is one path to put back: Want is what must be there (nil: nothing), with
// Content a file's bytes; Expect is what must be there now (nil: nothing) and
// ExpectHash the content Expect's file must hold ("sha256:<hex>"). Anything else
// there now is a conflict.
type Restore struct {
	Path       string
	Want       *EntryState
	Content    []byte
	Expect     *EntryState
	ExpectHash string
}

// RestoreConflict is a path that is not as a revert expects: each side is a
// content's hash, "absent", "a directory" or "a symlink to <target>".
type RestoreConflict struct {
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

// RestoreFiles puts rs back in the workspace dir, the restore's journal tagged tag
// (the record that makes it durable: see RecoverApplies). With conflicts and
// without force it changes nothing and returns them; with force it overwrites
// them. A path outside the workspace, in a .git, in turnlog's .turnlog or on the
// default-deny list is refused before anything is done. The Result it returns
// holds what the restore replaced until Settle.
func RestoreFiles(dir, tag string, rs []Restore, force bool) (*Result, []RestoreConflict, error) {
	return restoreFiles(dir, tag, rs, force, true)
}

// WriteFiles is RestoreFiles for a writer that holds the workspace's lock already
// (Workspace.Lock): the file tools write through it, so what they replace is kept
// until their call's result is durable, as an apply's is.
func WriteFiles(dir, tag string, rs []Restore) (*Result, []RestoreConflict, error) {
	return restoreFiles(dir, tag, rs, false, false)
}

func restoreFiles(dir, tag string, rs []Restore, force, lock bool) (*Result, []RestoreConflict, error) {
	for _, r := range rs {
		if err := restorable(r.Path); err != nil {
			return nil, nil, err
		}
		if r.Want != nil && r.Want.Kind == EntryFile && int64(len(r.Content)) != r.Want.Size {
			return nil, nil, &PathError{Path: r.Path, Reason: fmt.Sprintf("its content to restore holds %d bytes, not the %d it had", len(r.Content), r.Want.Size)}
		}
	}
	rs = append([]Restore(nil), rs...)
	sort.SliceStable(rs, func(i, j int) bool { return pathBefore(rs[i].Path, rs[j].Path) })
	st, err := openStaging(dir)
	if err != nil {
		return nil, nil, err
	}
	unlock := func() {}
	if lock {
		if unlock, err = lockDir(dir); err != nil {
			st.settle(false)
			return nil, nil, err
		}
	}
	res, conflicts, err := restoreLocked(st, tag, rs, force)
	unlock()
	if res != nil {
		res.held = !lock
	}
	switch {
	case res != nil:
	case lock:
		st.settle(false) // nothing of it stands: the staging directory goes
	default:
		st.abandon() // the same, without the lock the caller holds
	}
	return res, conflicts, err
}

func restoreLocked(st *staging, tag string, rs []Restore, force bool) (*Result, []RestoreConflict, error) {
	wsfd, stage := int(st.ws.Fd()), int(st.dir.Fd())
	cur := make([]current, len(rs))
	var conflicts []RestoreConflict
	for i, r := range rs {
		c, err := currentAt(wsfd, r.Path, r.Expect != nil && r.Expect.Kind == EntryFile)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", r.Path, err)
		}
		cur[i] = c
		if !sameEntry(r.Expect, r.ExpectHash, c) {
			expected, found := describe(r.Expect, r.ExpectHash), describe(c.state, c.hash)
			if expected == found { // the same content, another mode
				expected, found = fmt.Sprintf("%s, mode %04o", expected, r.Expect.Mode), fmt.Sprintf("%s, mode %04o", found, c.state.Mode)
			}
			conflicts = append(conflicts, RestoreConflict{Path: r.Path, Expected: expected, Found: found})
		}
	}
	// A directory that goes takes what it holds with it: each entry of it must be a
	// path the restore removes too, or it is a conflict (one it never removes, .git
	// or a denied path, refuses the restore).
	absent := map[string]bool{}
	for _, r := range rs {
		if r.Want == nil {
			absent[r.Path] = true
		}
	}
	for i, r := range rs {
		if c := cur[i]; c.state == nil || c.state.Kind != EntryDir || r.Want != nil && r.Want.Kind == EntryDir {
			continue
		}
		var refused error
		err := walkStaged(wsfd, r.Path, func(sub string, st *EntryState) {
			p := path.Join(r.Path, sub)
			switch {
			case sub == "." || absent[p] || refused != nil:
			case restorable(p) != nil:
				refused = &PathError{Path: p, Reason: "lies in " + r.Path + ", which the revert would remove, and is .git or a denied path, which a revert never removes"}
			default:
				conflicts = append(conflicts, RestoreConflict{Path: p, Expected: "absent", Found: describe(st, "")})
			}
		})
		if err == nil {
			err = refused
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if len(conflicts) > 0 && !force {
		return nil, conflicts, nil
	}
	if err := unix.Mkdirat(stage, restoreSource, 0o700); err != nil {
		return nil, nil, err
	}
	srcfd, err := openBeneath(stage, restoreSource, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(srcfd)
	for _, r := range rs {
		if r.Want != nil && r.Want.Kind == EntryFile {
			if err := writeSource(srcfd, r.Path, r.Content); err != nil {
				return nil, nil, fmt.Errorf("%s: stage its content: %w", r.Path, err)
			}
		}
	}
	ops := planRestore(rs, cur)
	if len(ops) == 0 {
		return nil, conflicts, nil
	}
	j, err := writeJournal(stage, journalHeader{ID: st.id, Tag: tag}, ops)
	if err != nil {
		return nil, nil, err
	}
	defer j.Close()
	prog, err := openProgress(stage)
	if err != nil {
		unix.Unlinkat(stage, journalName, 0)
		return nil, nil, err
	}
	defer prog.Close()
	x := &executor{id: st.id, ws: dirChain{root: wsfd}, upper: dirChain{root: srcfd}, stage: stage, progress: prog, exact: true, afterOp: restoreAfterOp}
	err = x.run(ops)
	x.ws.close()
	x.upper.close()
	if err == nil {
		if err = unix.Syncfs(wsfd); err == nil {
			err = markComplete(j)
		}
	}
	if err != nil {
		if _, rerr := rollback(wsfd, stage, st.id, ops); rerr != nil {
			err = fmt.Errorf("%w; taking back what was restored failed too (turnlog tries again at start): %v", err, rerr)
		} else {
			unix.Unlinkat(stage, journalName, 0)
		}
		return nil, nil, err
	}
	for _, o := range ops {
		if o.Kind == opRemove || o.OldIno != 0 && (o.Kind == opPut || o.Kind == opSymlink) {
			st.moved++
		}
	}
	return &Result{staged: st}, conflicts, nil
}

// restoreAfterOp, set by tests, runs before a restore's first step and after each.
var restoreAfterOp func(done, all int)

// restoreSource is the folder of the staging directory a restore's contents are
// written to first (the executor's upper layer); the steps' entries are numbered.
const restoreSource = "source"

// restorable refuses a path a revert must never write.
func restorable(rel string) error {
	switch {
	case rel == "" || rel == "." || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../"):
		return &PathError{Path: rel, Reason: "is not a path inside the workspace"}
	case ownedByTurnlog(rel):
		return &PathError{Path: rel, Reason: "is turnlog's own"}
	}
	for _, part := range strings.Split(rel, "/") {
		if strings.EqualFold(part, ".git") {
			return &PathError{Path: rel, Reason: "is inside .git, which a revert never writes (git keeps its own history)"}
		}
	}
	if why := denied(rel); why != "" {
		return &PathError{Path: rel, Reason: why}
	}
	return nil
}

// pathBefore orders paths so that a directory comes before what it holds.
func pathBefore(a, b string) bool {
	return slicesCompare(strings.Split(a, "/"), strings.Split(b, "/")) < 0
}

func slicesCompare(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// current is a path as it is now.
type current struct {
	state *EntryState // nil: nothing there
	ino   uint64
	hash  string // a file's content, when asked for
}

func currentAt(wsfd int, rel string, hash bool) (current, error) {
	var st unix.Stat_t
	err := lstatBeneath(wsfd, rel, &st)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return current{}, nil
	}
	if err != nil {
		return current{}, err
	}
	es, err := stateBeneath(wsfd, rel)
	if err != nil {
		return current{}, err
	}
	c := current{state: es, ino: st.Ino}
	if hash && es.Kind == EntryFile {
		if c.hash, err = hashBeneath(wsfd, rel); err != nil {
			return current{}, err
		}
	}
	return c, nil
}

// hashBeneath is the content hash of the file rel below root.
func hashBeneath(root int, rel string) (string, error) {
	fd, err := openBeneath(root, rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// sameEntry says whether what is there is what a revert expects: the same kind and
// mode, a file's content, a symlink's target (times and owners are not compared:
// a touch or a chown is not a change of what a file holds).
func sameEntry(want *EntryState, hash string, c current) bool {
	switch {
	case want == nil || c.state == nil:
		return want == nil && c.state == nil
	case want.Kind != c.state.Kind || want.Mode != c.state.Mode:
		return false
	case want.Kind == EntryFile:
		return hash == c.hash
	case want.Kind == EntrySymlink:
		return want.Target == c.state.Target
	}
	return true
}

func describe(st *EntryState, hash string) string {
	switch {
	case st == nil:
		return "absent"
	case st.Kind == EntryDir:
		return "a directory"
	case st.Kind == EntrySymlink:
		return "a symlink to " + st.Target
	case hash != "":
		return hash
	}
	return "a file"
}

// writeSource writes content at rel below the restore's source folder, making the
// folders above it.
func writeSource(srcfd int, rel string, content []byte) error {
	dir, name := path.Split(rel)
	parent := srcfd
	if dir != "" {
		at := srcfd
		for _, part := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
			if err := unix.Mkdirat(at, part, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				return err
			}
			fd, err := unix.Openat(at, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			if at != srcfd {
				unix.Close(at)
			}
			at = fd
		}
		parent = at
		defer unix.Close(parent)
	}
	fd, err := unix.Openat(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// planRestore is the steps that make each path of rs (sorted, a directory before
// what it holds) what it wants, from what is there (cur): an entry of another kind,
// or one that must go, is removed (with all below it); a directory is made; a file
// or link is written over what is there; every directory's mode and time are set
// last, the deepest first, once nothing below it changes any more.
func planRestore(rs []Restore, cur []current) []op {
	var ops []op
	var times [][]op // each directory's last steps: its mode, its time
	var removed []string
	under := func(rel string) bool {
		for _, r := range removed {
			if strings.HasPrefix(rel, r+"/") {
				return true
			}
		}
		return false
	}
	for i, r := range rs {
		c := cur[i]
		if under(r.Path) {
			c = current{} // gone with the directory above it
		}
		w := r.Want
		if c.state != nil && (w == nil || c.state.Kind != w.Kind) {
			ops = append(ops, op{Kind: opRemove, Rel: r.Path, OldIno: c.ino, OldKind: kindOfEntry(c.state.Kind), OldMode: c.state.Mode})
			removed = append(removed, r.Path)
			c = current{}
		}
		if w == nil {
			continue
		}
		sec, ns := w.MtimeNs/1e9, w.MtimeNs%1e9
		switch w.Kind {
		case EntryDir:
			// A directory is writable by its owner while what it holds is put back
			// (turnlog need not be root); its mode and time are set last.
			var final []op
			switch {
			case c.state == nil:
				ops = append(ops, op{Kind: opMkdir, Rel: r.Path, Mode: w.Mode | 0o700, UID: w.UID, GID: w.GID})
				if w.Mode|0o700 != w.Mode {
					final = append(final, op{Kind: opChmod, Rel: r.Path, Mode: w.Mode})
				}
			default:
				mode := c.state.Mode
				if mode&0o700 != 0o700 {
					ops = append(ops, op{Kind: opChmod, Rel: r.Path, Mode: mode | 0o700, OldIno: c.ino, OldMode: mode})
					mode |= 0o700
				}
				if mode != w.Mode {
					final = append(final, op{Kind: opChmod, Rel: r.Path, Mode: w.Mode, OldIno: c.ino, OldMode: mode})
				}
			}
			t := op{Kind: opTimes, Rel: r.Path, MtimeSec: sec, MtimeNs: ns}
			if c.state != nil {
				t.OldIno, t.OldSec, t.OldNs = c.ino, c.state.MtimeNs/1e9, c.state.MtimeNs%1e9
			}
			times = append(times, append(final, t))
		case EntryFile, EntrySymlink:
			o := op{Kind: opPut, Rel: r.Path, Mode: w.Mode, UID: w.UID, GID: w.GID, MtimeSec: sec, MtimeNs: ns, Size: w.Size}
			if w.Kind == EntrySymlink {
				o = op{Kind: opSymlink, Rel: r.Path, Target: w.Target, UID: w.UID, GID: w.GID, MtimeSec: sec, MtimeNs: ns}
			}
			if c.state != nil {
				o.OldIno, o.OldKind, o.OldMode = c.ino, kindOfEntry(c.state.Kind), c.state.Mode
			}
			ops = append(ops, o)
		}
	}
	for i := len(times) - 1; i >= 0; i-- {
		ops = append(ops, times[i]...)
	}
	return ops
}

func kindOfEntry(k string) kind {
	switch k {
	case EntryDir:
		return kindDir
	case EntryFile:
		return kindFile
	case EntrySymlink:
		return kindSymlink
	}
	return kindNone
}
