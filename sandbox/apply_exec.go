package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The executor carries a plan out, deciding nothing. It works through descriptors of
// both layers held for the whole apply (each directory opened one component at a
// time, never following a symlink), writes every file or link that replaces an
// entry to a temporary beside its place and exchanges the two in one rename — what
// it replaced goes on to the staging directory, as every removed entry does —, makes
// one that replaces nothing where it goes (O_EXCL: a rollback removes it all the
// same), and stops at the first error, which it returns. It runs in the helper,
// under the workspace's lock.

// dirChain opens the directories of one tree by their relative paths, below a root
// descriptor, keeping the chain to the last one open: consecutive steps of a plan
// mostly work in one directory.
type dirChain struct {
	root  int
	names []string
	fds   []int
}

func (c *dirChain) open(rel string) (int, error) {
	if rel == "." || rel == "" {
		c.truncate(0)
		return c.root, nil
	}
	parts := strings.Split(rel, "/")
	n := 0
	for n < len(c.names) && n < len(parts) && c.names[n] == parts[n] {
		n++
	}
	c.truncate(n)
	for _, name := range parts[n:] {
		parent := c.root
		if len(c.fds) > 0 {
			parent = c.fds[len(c.fds)-1]
		}
		fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, fmt.Errorf("open %s: %w", rel, err)
		}
		c.names, c.fds = append(c.names, name), append(c.fds, fd)
	}
	return c.fds[len(c.fds)-1], nil
}

// forget drops from the chain the directory rel and those below it: it moved.
func (c *dirChain) forget(rel string) {
	parts := strings.Split(rel, "/")
	if len(parts) > len(c.names) {
		return
	}
	for i, p := range parts {
		if c.names[i] != p {
			return
		}
	}
	c.truncate(len(parts) - 1)
}

func (c *dirChain) truncate(n int) {
	for len(c.fds) > n {
		unix.Close(c.fds[len(c.fds)-1])
		c.fds, c.names = c.fds[:len(c.fds)-1], c.names[:len(c.names)-1]
	}
}

func (c *dirChain) close() { c.truncate(0) }

// splitRel is a path's directory and last name.
func splitRel(rel string) (string, string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return ".", rel
}

// stagedName is the name, in the staging directory, of what op i moved there.
func stagedName(i int) string { return strconv.Itoa(i) }

// tempName is the name, beside its place, of op i's temporary.
func tempName(id string, i int) string { return fmt.Sprintf(".turnlog-%s-%d", id, i) }

type executor struct {
	id        string // the apply's, in its temporaries' names
	ws, upper dirChain
	stage     int
	buf       []byte
	// progress hears, after each step, its index and the inode of what it placed
	// (a rollback removes only what is still that): see apply_journal.go.
	progress *os.File
	// afterOp, set by tests, runs before the first step and after each, with the
	// number of steps done and of all.
	afterOp func(done, all int)
	// exact sets every entry's mode after making it: a restore runs in turnlog,
	// whose umask is not 0 (the helper's is, while it applies).
	exact bool
	// sum hashes a file's content as it is copied; placedHash is the last step's
	// ("sha256:<hex>"; "" where it copied no whole content), said in its progress
	// line so that the undo log need not read the file again.
	sum        hash.Hash
	placedHash string
}

// run carries ops out in order, stopping at the first error.
func (x *executor) run(ops []op) error {
	if x.afterOp != nil {
		x.afterOp(0, len(ops))
	}
	for i := range ops {
		x.placedHash = ""
		placed, err := x.do(i, &ops[i])
		if err != nil {
			return fmt.Errorf("%s: %w", ops[i].Rel, err)
		}
		if x.progress != nil {
			line := strconv.Itoa(i) + " " + strconv.FormatUint(placed, 10)
			if x.placedHash != "" {
				line += " " + x.placedHash
			}
			// A write, not a sync: what a kill -9 must not lose is in the page cache.
			if _, err := x.progress.WriteString(line + "\n"); err != nil {
				return fmt.Errorf("the apply's progress: %w", err)
			}
		}
		if x.afterOp != nil {
			x.afterOp(i+1, len(ops))
		}
	}
	return nil
}

// do carries op i out; it returns the inode of what it placed (0: it placed
// nothing).
func (x *executor) do(i int, o *op) (uint64, error) {
	dir, name := splitRel(o.Rel)
	fd, err := x.ws.open(dir)
	if err != nil {
		return 0, err
	}
	switch o.Kind {
	case opRemove:
		x.ws.forget(o.Rel)
		return 0, unix.Renameat(fd, name, x.stage, stagedName(i))
	case opMkdir:
		if err := unix.Mkdirat(fd, name, o.Mode&0o777); err != nil {
			return 0, err
		}
		d, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		defer unix.Close(d)
		if o.UID != 0 || o.GID != 0 || o.Mode&0o7000 != 0 || x.exact { // else made as it should be
			if err := unix.Fchown(d, int(o.UID), int(o.GID)); err != nil {
				return 0, fmt.Errorf("chown: %w", err)
			}
			if err := unix.Fchmod(d, o.Mode); err != nil {
				return 0, err
			}
		}
		return inodeOf(d)
	case opChmod:
		d, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		defer unix.Close(d)
		return 0, unix.Fchmod(d, o.Mode)
	case opTimes:
		return 0, unix.UtimesNanoAt(fd, name, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: o.MtimeSec, Nsec: o.MtimeNs}}, unix.AT_SYMLINK_NOFOLLOW)
	case opPut:
		if o.OldIno == 0 {
			// Nothing is replaced: written where it goes (O_EXCL), which a rollback
			// removes as it would have the temporary.
			return x.writeFile(fd, dir, name, name, o)
		}
		ino, err := x.writeFile(fd, dir, name, tempName(x.id, i), o)
		if err != nil {
			return 0, err
		}
		return ino, x.place(fd, name, i, o)
	case opSymlink:
		tmp := tempName(x.id, i)
		if err := unix.Symlinkat(o.Target, fd, tmp); err != nil {
			return 0, err
		}
		if err := unix.Fchownat(fd, tmp, int(o.UID), int(o.GID), unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return 0, fmt.Errorf("chown: %w", err)
		}
		if err := unix.UtimesNanoAt(fd, tmp, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: o.MtimeSec, Nsec: o.MtimeNs}}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return 0, err
		}
		st, ok := lstatAt(fd, tmp)
		if !ok {
			return 0, fmt.Errorf("the link just made is gone")
		}
		return st.Ino, x.place(fd, name, i, o)
	}
	return 0, fmt.Errorf("unknown step %d", o.Kind)
}

func inodeOf(fd int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// place moves op i's temporary to its name: in one rename where nothing was, else
// exchanged with what was there, which then goes to the staging directory.
func (x *executor) place(fd int, name string, i int, o *op) error {
	tmp := tempName(x.id, i)
	if o.OldIno == 0 {
		return unix.Renameat2(fd, tmp, fd, name, unix.RENAME_NOREPLACE)
	}
	if err := unix.Renameat2(fd, tmp, fd, name, unix.RENAME_EXCHANGE); err != nil {
		return err
	}
	return unix.Renameat(fd, tmp, x.stage, stagedName(i))
}

// writeFile writes the upper layer's file name to dst in the workspace's directory
// fd (a temporary, or its place when it replaces nothing): its content (holes kept
// holes), owner, mode and modification time. The helper's umask is 0 while it
// applies, so the file is made with its mode.
func (x *executor) writeFile(fd int, dir, name, dst string, o *op) (uint64, error) {
	ufd, err := x.upper.open(dir)
	if err != nil {
		return 0, err
	}
	src, err := unix.Openat(ufd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(src)
	out, err := unix.Openat(fd, dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, o.Mode)
	if err != nil {
		return 0, err
	}
	ino, err := inodeOf(out)
	if err == nil {
		if x.sum == nil {
			x.sum = sha256.New()
		}
		x.sum.Reset()
		err = x.copyContent(out, src, o.Size, o.Sparse)
	}
	if err == nil && !o.Sparse { // a content with holes was hashed in pieces
		x.placedHash = "sha256:" + hex.EncodeToString(x.sum.Sum(nil))
	}
	if err == nil && (o.UID != 0 || o.GID != 0) { // the helper, root, made it root's
		if err = unix.Fchown(out, int(o.UID), int(o.GID)); err != nil {
			err = fmt.Errorf("chown: %w", err)
		}
	}
	if err == nil && x.exact {
		err = unix.Fchmod(out, o.Mode)
	}
	if err == nil {
		err = futimens(out, unix.Timespec{Nsec: unix.UTIME_NOW}, unix.Timespec{Sec: o.MtimeSec, Nsec: o.MtimeNs})
	}
	if cerr := unix.Close(out); err == nil {
		err = cerr
	}
	return ino, err
}

// futimens sets an open file's times (utimensat with no path).
func futimens(fd int, atime, mtime unix.Timespec) error {
	ts := [2]unix.Timespec{atime, mtime}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// copyContent copies size bytes from src to dst; with sparse, only the ranges that
// hold data, leaving holes holes.
func (x *executor) copyContent(dst, src int, size int64, sparse bool) error {
	if !sparse {
		return x.copyRange(dst, src, 0, size)
	}
	for pos := int64(0); pos < size; {
		start, err := unix.Seek(src, pos, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break
		}
		if err != nil {
			return err
		}
		end, err := unix.Seek(src, start, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if err := x.copyRange(dst, src, start, min(end, size)-start); err != nil {
			return err
		}
		pos = end
	}
	return unix.Ftruncate(dst, size)
}

// copyRange copies n bytes at off, through a buffer: the write layer is a tmpfs and
// the workspace another file system, between which the kernel copies no faster.
func (x *executor) copyRange(dst, src int, off, n int64) error {
	if x.buf == nil {
		x.buf = make([]byte, 1<<20)
	}
	for n > 0 {
		r, err := unix.Pread(src, x.buf[:min(n, int64(len(x.buf)))], off)
		if err != nil {
			return err
		}
		if r == 0 {
			return io.ErrUnexpectedEOF
		}
		if x.sum != nil {
			x.sum.Write(x.buf[:r])
		}
		for w := 0; w < r; {
			k, err := unix.Pwrite(dst, x.buf[w:r], off+int64(w))
			if err != nil {
				return err
			}
			w += k
		}
		off, n = off+int64(r), n-int64(r)
	}
	return nil
}
