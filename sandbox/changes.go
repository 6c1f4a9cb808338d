package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Changes is what a command changed in its workspace, as turnlog applied it.
type Changes struct {
	// Paths are the workspace paths changed (written, created or deleted), the first
	// MaxListedChanges of them; Count is how many there were.
	Paths []string `json:"paths,omitempty"`
	Count int      `json:"count"`
	// Refused are changes turnlog did not apply, and why.
	Refused []Refusal `json:"refused,omitempty"`
}

// Refusal is one change of a command's that was not applied.
type Refusal struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// MaxListedChanges caps Changes.Paths and Changes.Refused.
const MaxListedChanges = 100

// Reasons a change is refused.
const (
	refusedGitInternals = ".git is read-only to commands (git's config, hooks and object pointers would run or reach code on the host)"
	refusedNewRepo      = "a command may not create a git repository (git would run its config when someone runs git here)"
	refusedSpecial      = "devices, fifos and sockets are not applied"
)

// applier applies an overlay's upper layer to the real workspace. It runs in the
// helper after every process of the command is dead, so nothing changes under it.
type applier struct {
	gitWritable bool     // changes inside an existing .git are applied, but for gitProtected ones
	budget      int64    // bytes of file data still to be applied: the write quota, counted per name
	upper       string   // the upper layer's directory
	ws          *os.Root // the real workspace
	uid, gid    int      // who owns what a command creates: the workspace's owner
	out         Changes
	times       []func() // directory times, set once their contents are in place
}

// applyChanges applies what a command wrote (the overlay's upper layer) to the
// workspace, with the workspace owner's ownership, permissions without setuid,
// setgid or sticky bits, no extended attributes (so no file capability), and
// modification times kept. A change inside .git (with gitWritable: to its config,
// hooks, info or pointers), or one that would create a git repository, is refused, as
// is a device, fifo or socket.
func applyChanges(l *layers, gitWritable bool, writeBytes uint64) (Changes, error) {
	ws, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", l.workspace.Fd()))
	if err != nil {
		return Changes{}, err
	}
	defer ws.Close()
	fi, err := l.workspace.Stat()
	if err != nil {
		return Changes{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	a := &applier{upper: fmt.Sprintf("/proc/self/fd/%d", l.upper.Fd()), ws: ws, uid: int(st.Uid), gid: int(st.Gid), gitWritable: gitWritable,
		budget: int64(writeBytes)}
	err = a.dir(".")
	for i := len(a.times) - 1; i >= 0; i-- {
		a.times[i]()
	}
	return a.out, err
}

func (a *applier) changed(rel string) {
	a.out.Count++
	if len(a.out.Paths) < MaxListedChanges {
		a.out.Paths = append(a.out.Paths, rel)
	}
}

func (a *applier) refuse(rel, why string) {
	if len(a.out.Refused) < MaxListedChanges {
		a.out.Refused = append(a.out.Refused, Refusal{Path: rel, Reason: why})
	}
}

// dir applies the upper layer's directory rel: every entry in it, and — when the
// directory is opaque (it replaced one of the workspace's) — the removal of every
// workspace entry it does not hold.
func (a *applier) dir(rel string) error {
	entries, err := os.ReadDir(path.Join(a.upper, rel))
	if err != nil {
		return err
	}
	if rel != "." && opaque(path.Join(a.upper, rel)) {
		if err := a.dropUnlisted(rel, entries); err != nil {
			return err
		}
	}
	gitLike := a.gitLike(rel, entries)
	for _, e := range entries {
		r := path.Join(rel, e.Name())
		if gitLike && gitDirNames[strings.ToLower(e.Name())] {
			a.refuse(r, refusedNewRepo)
			continue
		}
		// One change that cannot be applied (a path too long, a file system error) is
		// refused with its reason; the others still are applied.
		if err := a.entry(r); err != nil {
			a.refuse(r, "not applied: "+err.Error())
		}
	}
	return nil
}

// gitDirNames are what makes a directory a repository to git, or configures one.
var gitDirNames = map[string]bool{"head": true, "objects": true, "refs": true, "config": true, "config.worktree": true, "commondir": true,
	"gitdir": true, "packed-refs": true, "hooks": true, "info": true, "worktrees": true, "modules": true, "index": true}

// gitLike says whether the directory rel, with the upper layer's entries applied,
// would be a git repository by git's own test — a HEAD, and an objects and a refs
// directory (or symlinks to them, which git follows) or a commondir file naming where
// they are — a bare one, or a .git under another name, outside an existing .git. Its
// git files are then refused: git run on the host would take that directory for a
// repository and run its config.
func (a *applier) gitLike(rel string, upper []os.DirEntry) bool {
	for _, p := range strings.Split(rel, "/") {
		if strings.EqualFold(p, ".git") {
			return false // guard decides inside a .git
		}
	}
	// has: an entry of that name there — for a directory, a symlink counts (git
	// follows it); for a file, anything but a directory.
	has := func(name string, dir bool) bool {
		ok := func(m fs.FileMode) bool { return m.IsDir() == dir || dir && m&fs.ModeSymlink != 0 }
		for _, e := range upper {
			if strings.EqualFold(e.Name(), name) {
				if e.Type()&fs.ModeCharDevice != 0 {
					return false // deleted
				}
				return ok(e.Type())
			}
		}
		fi, err := a.ws.Lstat(path.Join(rel, name))
		return err == nil && ok(fi.Mode())
	}
	return has("HEAD", false) && (has("objects", true) && has("refs", true) || has("commondir", false))
}

func (a *applier) entry(rel string) error {
	up := path.Join(a.upper, rel)
	fi, err := os.Lstat(up)
	if err != nil {
		return err
	}
	if why := a.guard(rel, fi.IsDir()); why != "" {
		a.refuse(rel, why)
		return nil
	}
	cur, curErr := a.ws.Lstat(rel)
	exists := curErr == nil
	switch mode := fi.Mode(); {
	case mode&fs.ModeCharDevice != 0 && fi.Sys().(*syscall.Stat_t).Rdev == 0: // a whiteout: deleted
		if exists {
			if err := a.ws.RemoveAll(rel); err != nil {
				return err
			}
			a.changed(rel)
		}
		return nil
	case mode.IsDir():
		if exists && !cur.IsDir() {
			if err := a.ws.RemoveAll(rel); err != nil {
				return err
			}
			exists = false
		}
		if !exists {
			if err := a.ws.Mkdir(rel, 0o700); err != nil {
				return err
			}
			a.own(rel)
			a.changed(rel)
		}
		if err := a.ws.Chmod(rel, mode.Perm()); err != nil {
			return err
		}
		mtime := fi.ModTime()
		a.times = append(a.times, func() { a.ws.Chtimes(rel, mtime, mtime) })
		return a.dir(rel)
	case mode.IsRegular():
		if exists && !cur.Mode().IsRegular() {
			if err := a.ws.RemoveAll(rel); err != nil {
				return err
			}
			exists = false
		}
		if err := a.copyFile(rel, up, fi); err != nil {
			return err
		}
		if !exists {
			a.own(rel)
		}
		a.changed(rel)
		return nil
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(up)
		if err != nil {
			return err
		}
		if exists {
			if err := a.ws.RemoveAll(rel); err != nil {
				return err
			}
		}
		if err := a.ws.Symlink(target, rel); err != nil {
			return err
		}
		a.own(rel)
		a.changed(rel)
		return nil
	}
	a.refuse(rel, refusedSpecial)
	return nil
}

// copyFile writes the upper layer's file into the workspace in place (an existing
// file keeps its owner and links), holes kept holes, with its permissions less
// setuid, setgid and sticky bits, and its modification time. The data written counts
// against the write quota, each name of a hard-linked file again: past it the file is
// refused (sparse files and hard links cannot make the host hold more than a
// command could write).
func (a *applier) copyFile(rel, up string, fi fs.FileInfo) error {
	src, err := os.Open(up)
	if err != nil {
		return err
	}
	defer src.Close()
	var extents [][2]int64 // data ranges; the rest are holes
	var data int64
	for pos := int64(0); pos < fi.Size(); {
		start, err := unix.Seek(int(src.Fd()), pos, unix.SEEK_DATA)
		if err == syscall.ENXIO {
			break
		}
		if err != nil {
			return err
		}
		end, err := unix.Seek(int(src.Fd()), start, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		extents = append(extents, [2]int64{start, end})
		data += end - start
		pos = end
	}
	if data > a.budget {
		return fmt.Errorf("%d bytes of data is past what is left of the write quota (%d bytes)", data, a.budget)
	}
	a.budget -= data
	dst, err := a.ws.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	for _, x := range extents {
		if err == nil {
			_, err = io.Copy(io.NewOffsetWriter(dst, x[0]), io.NewSectionReader(src, x[0], x[1]-x[0]))
		}
	}
	if err == nil {
		err = dst.Truncate(fi.Size())
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := a.ws.Chmod(rel, fi.Mode().Perm()); err != nil {
		return err
	}
	return a.ws.Chtimes(rel, time.Now(), fi.ModTime())
}

// own gives what a command created to the workspace's owner (turnlog creates it).
func (a *applier) own(rel string) {
	if a.uid != 0 || a.gid != 0 {
		a.ws.Lchown(rel, a.uid, a.gid)
	}
}

// dropUnlisted removes from the workspace's directory rel what an opaque upper
// directory does not hold: the command removed the directory and made a new one.
func (a *applier) dropUnlisted(rel string, keep []os.DirEntry) error {
	f, err := a.ws.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil // not a directory: entry replaces it
	}
	kept := map[string]bool{}
	for _, e := range keep {
		kept[e.Name()] = true
	}
	for _, n := range names {
		if kept[n] {
			continue
		}
		r := path.Join(rel, n)
		if why := a.guard(r, false); why != "" {
			a.refuse(r, why)
			continue
		}
		if err := a.ws.RemoveAll(r); err != nil {
			return err
		}
		a.changed(r)
	}
	return nil
}

// guard says why a change at rel (to a directory, when dir) may not be applied, or "".
func (a *applier) guard(rel string, dir bool) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if !strings.EqualFold(p, ".git") {
			continue
		}
		fi, err := a.ws.Lstat(path.Join(parts[:i+1]...))
		switch {
		case err != nil:
			return refusedNewRepo
		case a.gitWritable && fi.IsDir() && i == len(parts)-1 && dir:
			continue // the repository's directory itself, kept a directory
		case a.gitWritable && fi.IsDir() && i < len(parts)-1 && !gitProtected(strings.Join(parts[i+1:], "/")):
			continue // a git write the policy allows (a nested .git below is checked too)
		}
		return refusedGitInternals
	}
	return ""
}

// opaque says whether an upper directory replaced the lower one (overlayfs marks it).
func opaque(dir string) bool {
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(dir, "trusted.overlay.opaque", buf)
	return err == nil && n == 1 && buf[0] == 'y'
}
