package sandbox

import (
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sys/unix"
)

// The two snapshots a plan is made of, read through descriptors (never by path: a
// path may be longer than the kernel takes, and a descriptor cannot be swapped).

// readUpper reads the write layer below its root directory's descriptor.
func readUpper(root int) (*upperEntry, error) {
	e := &upperEntry{name: ".", kind: kindDir}
	return e, readUpperDir(root, e, make([]byte, 64<<10), 0)
}

func readUpperDir(fd int, e *upperEntry, buf []byte, depth int) error {
	if depth > maxApplyDepth {
		return &PlanError{fmt.Sprintf("the command's files lie more than %d directories deep, which turnlog does not apply: nothing was applied", maxApplyDepth)}
	}
	ents, err := readDir(fd, buf)
	if err != nil {
		return err
	}
	for _, de := range ents {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, de.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("the write layer's %s: %w", de.name, err)
		}
		c := &upperEntry{name: de.name, mode: st.Mode & 0o7777, size: st.Size, data: min(st.Size, st.Blocks*512), nlink: uint32(st.Nlink), mtime: st.Mtim}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			c.kind = kindDir
			cfd, err := unix.Openat(fd, de.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("the write layer's %s: %w", de.name, err)
			}
			// Below an opaque directory nothing has a lower layer: overlayfs marks only
			// the top one, and each below replaces its workspace namesake whole too.
			c.opaque = e.opaque || opaqueDir(cfd)
			err = readUpperDir(cfd, c, buf, depth+1)
			unix.Close(cfd)
			if err != nil {
				return err
			}
		case unix.S_IFREG:
			c.kind = kindFile
		case unix.S_IFLNK:
			c.kind = kindSymlink
			if c.target, err = readlinkat(fd, de.name); err != nil {
				return fmt.Errorf("the write layer's %s: %w", de.name, err)
			}
		case unix.S_IFCHR:
			c.kind = kindSpecial
			if st.Rdev == 0 {
				c.kind = kindWhiteout
			}
		default:
			c.kind = kindSpecial
		}
		e.children = append(e.children, c)
	}
	sort.Slice(e.children, func(i, j int) bool { return e.children[i].name < e.children[j].name })
	return nil
}

// opaqueDir says whether an upper directory replaced the lower one (overlayfs marks
// it so).
func opaqueDir(fd int) bool {
	buf := make([]byte, 8)
	n, err := unix.Fgetxattr(fd, "trusted.overlay.opaque", buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

func readlinkat(dir int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// gitProbeNames are the entries of a directory the repository check looks at.
var gitProbeNames = []string{"HEAD", "objects", "refs", "commondir"}

// readWorkspace reads what the plan of upper needs of the workspace below its root's
// descriptor: for every directory of the write layer, the workspace's entries of the
// same names and those git's test of a repository looks at; the whole of a
// directory an opaque one replaces; and every entry of a tree that will be removed.
func readWorkspace(root int, upper *upperEntry) (*wsEntry, error) {
	ws, err := statEntry(root, ".")
	if err != nil {
		return nil, err
	}
	ws.mount = false // the workspace itself may well be one
	return ws, readWorkspaceDir(root, ws, upper, make([]byte, 64<<10), 0)
}

func readWorkspaceDir(fd int, w *wsEntry, up *upperEntry, buf []byte, depth int) error {
	w.children = map[string]*wsEntry{}
	lookup := func(name string) error {
		e, err := statEntry(fd, name)
		switch {
		case errors.Is(err, unix.ENOENT):
			return nil
		case err != nil:
			return fmt.Errorf("the workspace's %s: %w", name, err)
		}
		w.children[name] = e
		return nil
	}
	if up.opaque {
		ents, err := readDir(fd, buf)
		if err != nil {
			return err
		}
		for _, de := range ents {
			if err := lookup(de.name); err != nil {
				return err
			}
		}
		w.listed = true
	} else {
		for _, c := range up.children {
			if err := lookup(c.name); err != nil {
				return err
			}
		}
		for _, n := range gitProbeNames {
			if _, ok := w.children[n]; !ok {
				if err := lookup(n); err != nil {
					return err
				}
			}
		}
	}
	for _, name := range sortedNames(w.children) {
		c := w.children[name]
		if c.kind != kindDir || c.mount {
			continue // a mount point is refused whole: nothing below it is read
		}
		u := up.child(name)
		var whole bool
		switch {
		case u != nil && u.kind == kindDir:
		case u != nil, up.opaque:
			whole = true // it will be removed (or refused): all of it counts
		default:
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("the workspace's %s: %w", name, err)
		}
		if whole {
			err = readTree(cfd, c, buf, depth+1)
		} else {
			err = readWorkspaceDir(cfd, c, u, buf, depth+1)
		}
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// readTree reads every entry below the workspace directory fd.
func readTree(fd int, w *wsEntry, buf []byte, depth int) error {
	if depth > maxApplyDepth {
		return &PlanError{fmt.Sprintf("a workspace directory the command removed lies more than %d directories deep: nothing was applied", maxApplyDepth)}
	}
	ents, err := readDir(fd, buf)
	if err != nil {
		return err
	}
	w.children, w.listed = make(map[string]*wsEntry, len(ents)), true
	for _, de := range ents {
		c, err := statEntry(fd, de.name)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return err
		}
		w.children[de.name] = c
		if c.kind != kindDir || c.mount {
			continue
		}
		cfd, err := unix.Openat(fd, de.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		err = readTree(cfd, c, buf, depth+1)
		unix.Close(cfd)
		if err != nil {
			return err
		}
	}
	return nil
}

// statEntry reads the workspace's entry name in the directory fd, and whether a
// mount (of the host's: the command saw the directory beneath it) sits there.
func statEntry(fd int, name string) (*wsEntry, error) {
	var st unix.Statx_t
	if err := unix.Statx(fd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_BASIC_STATS, &st); err != nil {
		return nil, err
	}
	e := &wsEntry{name: name, mode: uint32(st.Mode) & 0o7777, uid: st.Uid, gid: st.Gid, ino: st.Ino,
		ctime: unix.Timespec{Sec: st.Ctime.Sec, Nsec: int64(st.Ctime.Nsec)}, mtime: unix.Timespec{Sec: st.Mtime.Sec, Nsec: int64(st.Mtime.Nsec)},
		bytes: int64(st.Blocks) * 512, mount: st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0}
	switch uint32(st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		e.kind = kindDir
	case unix.S_IFREG:
		e.kind = kindFile
	case unix.S_IFLNK:
		e.kind = kindSymlink
	default:
		e.kind = kindSpecial
	}
	return e, nil
}

// workspaceUsage is what the workspace below its root's descriptor holds: bytes on
// the disk and entries, turnlog's own .turnlog left out.
func workspaceUsage(root int) (bytes, entries int64, err error) {
	buf := make([]byte, 64<<10)
	var walk func(fd int, top bool, depth int) error
	walk = func(fd int, top bool, depth int) error {
		if depth > maxApplyDepth {
			return nil
		}
		ents, err := readDir(fd, buf)
		if err != nil {
			return err
		}
		for _, de := range ents {
			if top && de.name == stagingDirName {
				continue
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, de.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			entries++
			bytes += st.Blocks * 512
			if de.dir {
				cfd, err := unix.Openat(fd, de.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue
				}
				err = walk(cfd, false, depth+1)
				unix.Close(cfd)
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	return bytes, entries, walk(root, true, 0)
}
