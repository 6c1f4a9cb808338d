package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// What an apply changed, path by path, as it was before and as it is after — what an
// undo log records of a command's call. It is read by turnlog from the apply's
// journal and its staging directory (where everything the apply replaced or removed
// was moved, whole, by a rename) and from the workspace, under the workspace's lock,
// once the apply finished and before it is settled.

// Kinds of entry a change names.
const (
	EntryFile    = "file"
	EntryDir     = "dir"
	EntrySymlink = "symlink"
)

// EntryState is one workspace entry as it was or is: what a restore puts back.
type EntryState struct {
	Kind    string `json:"kind"`
	Mode    uint32 `json:"mode"` // permission, set-id and sticky bits
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	MtimeNs int64  `json:"mtime_ns"`         // the modification time, in ns since the epoch
	Size    int64  `json:"size,omitempty"`   // a file's
	Target  string `json:"target,omitempty"` // a symlink's
}

// place is where an entry's content is read: a path below a directory of turnlog's.
type place struct {
	root *os.File
	rel  string
}

// FileChange is one path an apply changed: Before and After are nil where there was
// or is nothing. Moved says that what the apply put there is no longer what is there
// (something changed it between the apply and this reading): After is then what is
// there, which the apply did not make.
type FileChange struct {
	Path          string
	Before, After *EntryState
	Moved         bool
	// AfterHash is the hash ("sha256:<hex>") of the content the apply copied there,
	// where what is there is what it placed (the same inode, size and time): the
	// content need not be read again to be named. "": read it (OpenAfter).
	AfterHash     string
	before, after place
}

// OpenBefore opens the content the file had before the change (a file's only).
func (c *FileChange) OpenBefore() (io.ReadCloser, error) { return c.before.open(c.Before) }

// OpenAfter opens the content the file has after it.
func (c *FileChange) OpenAfter() (io.ReadCloser, error) { return c.after.open(c.After) }

func (p place) open(st *EntryState) (io.ReadCloser, error) {
	if st == nil || st.Kind != EntryFile || p.root == nil {
		return nil, errors.New("no file content there")
	}
	// Without its access time: reading the file would otherwise change its inode (the
	// apply or a rename just changed it), a journaled write a file. Only its owner, or
	// a process that may act as any owner, opens a file so.
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_NONBLOCK
	fd, err := openBeneath(int(p.root.Fd()), p.rel, flags|unix.O_NOATIME)
	if err == unix.EPERM {
		fd, err = openBeneath(int(p.root.Fd()), p.rel, flags)
	}
	if err != nil {
		return nil, err
	}
	return contentReader(fd), nil
}

// contentReader reads a file's content by its descriptor with plain reads: many
// small files are read, and an os.File would cost two more system calls each (it
// offers the descriptor to the poller).
type contentReader int

func (r contentReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(int(r), b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (r contentReader) Close() error { return unix.Close(int(r)) }

// FileChanges reads what the apply changed and hands it to fn, holding the
// workspace's lock (unless its writer holds it: WriteFiles) and what the apply replaced (the call's contents can be read
// through each change until fn returns). Nothing is handed when the command changed
// nothing. It fails once the apply was settled.
func (r *Result) FileChanges(fn func([]FileChange) error) error {
	if r == nil || r.staged == nil {
		return fn(nil)
	}
	s := r.staged
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled {
		return errors.New("the apply was settled: what it replaced is gone")
	}
	stage := int(s.dir.Fd())
	_, ops, complete, err := readJournal(stage)
	if errors.Is(err, errNoJournal) {
		return fn(nil)
	}
	if err != nil {
		return err
	}
	if !complete {
		return errors.New("the apply did not finish: nothing of it is in the workspace")
	}
	if !r.held {
		unlock, err := lockDir(s.ws.Name())
		if err != nil {
			return err
		}
		defer unlock()
	}
	changes, err := readChanges(s.ws, s.dir, ops)
	if err != nil {
		return fmt.Errorf("read what the apply changed: %w", err)
	}
	return fn(changes)
}

// readChanges is, for each path the steps ops touched, its state before the first
// step that touched it and after the last, in the order the steps first touched
// them (a removed tree: each path of it, its top first).
func readChanges(ws, stage *os.File, ops []op) ([]FileChange, error) {
	_, placed := readProgress(int(stage.Fd()))
	var out []FileChange
	at := map[string]int{}
	add := func(rel string, before *EntryState, from place) *FileChange {
		if i, ok := at[rel]; ok {
			return &out[i]
		}
		at[rel] = len(out)
		out = append(out, FileChange{Path: rel, Before: before, before: from})
		return &out[len(out)-1]
	}
	// made is the inode the last step on a path placed there (0: it placed none);
	// gone, the paths a removal took that no later step placed anything at.
	made := map[string]uint64{}
	put := map[string]int{} // the step that copied a file's content there last
	gone := map[string]bool{}
	oldSet := map[string]bool{}
	wsfd, stagefd := int(ws.Fd()), int(stage.Fd())
	for i, o := range ops {
		staged := stagedName(i)
		switch o.Kind {
		case opRemove:
			if err := walkStaged(stagefd, staged, func(sub string, st *EntryState) {
				add(path.Join(o.Rel, sub), st, place{stage, path.Join(staged, sub)})
				gone[path.Join(o.Rel, sub)] = true
			}); err != nil {
				return nil, err
			}
			made[o.Rel] = 0
			delete(put, o.Rel)
		case opPut, opSymlink:
			var before *EntryState
			if o.OldIno != 0 {
				st, err := stateBeneath(stagefd, staged)
				if err != nil {
					return nil, fmt.Errorf("%s as it was: %w", o.Rel, err)
				}
				before = st
			}
			add(o.Rel, before, place{stage, staged})
			made[o.Rel], gone[o.Rel] = placedAt(placed, i).ino, false
			delete(put, o.Rel)
			if o.Kind == opPut {
				put[o.Rel] = i
			}
		case opMkdir:
			add(o.Rel, nil, place{})
			made[o.Rel], gone[o.Rel] = placedAt(placed, i).ino, false
			delete(put, o.Rel)
		case opChmod, opTimes:
			if o.OldIno == 0 {
				continue // a directory an earlier step made
			}
			c, ok := at[o.Rel]
			if !ok {
				st, err := stateBeneath(wsfd, o.Rel)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", o.Rel, err)
				}
				add(o.Rel, st, place{})
				c = at[o.Rel]
			}
			if b := out[c].Before; b != nil && b.Kind == EntryDir && !oldSet[o.Rel+"\x00"+strconv.Itoa(int(o.Kind))] {
				oldSet[o.Rel+"\x00"+strconv.Itoa(int(o.Kind))] = true // the first step's old value is the one before
				if o.Kind == opChmod {
					b.Mode = o.OldMode
				} else {
					b.MtimeNs = o.OldSec*1e9 + o.OldNs
				}
			}
		}
	}
	dirs := dirsBeneath{root: wsfd}
	defer dirs.close()
	for i := range out {
		c := &out[i]
		var now unix.Stat_t
		st, err := dirs.state(c.Path, &now)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
			// Nothing there: a file or a link stands where a directory above it was.
		case err != nil:
			return nil, fmt.Errorf("%s as it is: %w", c.Path, err)
		default:
			c.After, c.after = st, place{ws, c.Path}
		}
		if ino, ok := made[c.Path]; ok && ino != 0 {
			c.Moved = err != nil || now.Ino != ino
		}
		if gone[c.Path] && c.After != nil {
			c.Moved = true // the apply left nothing here: what is there is another writer's
		}
		if i, ok := put[c.Path]; ok && !c.Moved && c.After != nil && c.After.Kind == EntryFile {
			o := &ops[i]
			if c.After.Size == o.Size && c.After.MtimeNs == o.MtimeSec*1e9+o.MtimeNs {
				c.AfterHash = placedAt(placed, i).hash
			}
		}
	}
	// A directory whose only change is its time, with nothing of it changed since,
	// is no change: the apply set it back as it was.
	kept := out[:0]
	for _, c := range out {
		if c.Before != nil && c.After != nil && c.Before.Kind == EntryDir && *c.Before == *c.After && !c.Moved {
			continue
		}
		kept = append(kept, c)
	}
	return kept, nil
}

// placedAt is what step i placed, as its progress says.
func placedAt(placed []placement, i int) placement {
	if i < len(placed) {
		return placed[i]
	}
	return placement{}
}

// walkStaged calls fn for the staged entry name and, a directory, everything below
// it, each with its path below name ("." for name itself), parents first.
func walkStaged(stage int, name string, fn func(sub string, st *EntryState)) error {
	st, err := stateBeneath(stage, name)
	if err != nil {
		return err
	}
	fn(".", st)
	if st.Kind != EntryDir {
		return nil
	}
	var walk func(rel string) error
	buf := make([]byte, 16<<10)
	walk = func(rel string) error {
		fd, err := openBeneath(stage, path.Join(name, rel), unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		ents, err := readDir(fd, buf)
		unix.Close(fd)
		if err != nil {
			return err
		}
		for _, e := range ents {
			sub := path.Join(rel, e.name)
			st, err := stateBeneath(stage, path.Join(name, sub))
			if err != nil {
				return err
			}
			if st.Kind == "" {
				continue // a special file (never applied, never restored)
			}
			fn(sub, st)
			if st.Kind == EntryDir {
				if err := walk(sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(".")
}

// resolveBeneath keeps a path below its directory: no "..", no symlink followed,
// no other file system.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// openBeneath opens rel below the directory root without following a symlink.
func openBeneath(root int, rel string, flags int) (int, error) {
	for {
		fd, err := unix.Openat2(root, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveBeneath})
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// lstatBeneath is lstat of rel below root, its directories resolved beneath root.
func lstatBeneath(root int, rel string, st *unix.Stat_t) error {
	dir, name := path.Split(rel)
	parent := root
	if dir != "" {
		fd, err := openBeneath(root, dir, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		parent = fd
	}
	if name == "" || name == "." {
		return unix.Fstat(parent, st)
	}
	return unix.Fstatat(parent, name, st, unix.AT_SYMLINK_NOFOLLOW)
}

// dirsBeneath opens the directory of each path below root (as openBeneath does),
// keeping the last one open: changes come a directory at a time.
type dirsBeneath struct {
	root int
	dir  string
	fd   int
}

// state is the state of the entry rel below the root, and st its lstat.
func (d *dirsBeneath) state(rel string, st *unix.Stat_t) (*EntryState, error) {
	dir, name := path.Split(rel)
	if dir == "" || name == "" || name == "." {
		if err := lstatBeneath(d.root, rel, st); err != nil {
			return nil, err
		}
		return stateOf(d.root, rel, st)
	}
	if dir != d.dir || d.fd <= 0 {
		d.close()
		fd, err := openBeneath(d.root, dir, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return nil, err
		}
		d.dir, d.fd = dir, fd
	}
	if err := unix.Fstatat(d.fd, name, st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return stateOf(d.fd, name, st)
}

func (d *dirsBeneath) close() {
	if d.fd > 0 {
		unix.Close(d.fd)
	}
	d.dir, d.fd = "", 0
}

// stateBeneath is the state of the entry rel below root (Kind "" for a special
// file).
func stateBeneath(root int, rel string) (*EntryState, error) {
	var st unix.Stat_t
	if err := lstatBeneath(root, rel, &st); err != nil {
		return nil, err
	}
	return stateOf(root, rel, &st)
}

// stateOf is the state st says of the entry rel below root (a symlink's target is
// read there).
func stateOf(root int, rel string, st *unix.Stat_t) (*EntryState, error) {
	es := &EntryState{Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid, MtimeNs: st.Mtim.Sec*1e9 + st.Mtim.Nsec}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		es.Kind, es.Size = EntryFile, st.Size
	case unix.S_IFDIR:
		es.Kind = EntryDir
	case unix.S_IFLNK:
		es.Kind = EntrySymlink
		target, err := readlinkBeneath(root, rel)
		if err != nil {
			return nil, err
		}
		es.Target = target
	}
	return es, nil
}

// readlinkBeneath reads the symlink rel below root.
func readlinkBeneath(root int, rel string) (string, error) {
	dir, name := path.Split(rel)
	parent := root
	if dir != "" {
		fd, err := openBeneath(root, dir, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		parent = fd
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(parent, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
