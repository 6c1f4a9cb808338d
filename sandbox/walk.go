package sandbox

import (
	"path"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// walkTree calls fn for every entry below the directory root (a path), depth
// first, with the path of its directory relative to root ("" for root itself), its
// name and whether it is a directory; fn returning true skips a directory's
// contents. It reads directories with getdents64 and
// takes each entry's type from it (lstat only where the file system leaves it
// unknown), so a workspace of tens of thousands of files is walked in milliseconds:
// the helper does this before every command.
func walkTree(root string, fn func(parent, name string, dir bool) (skip bool)) error {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) // root may be /proc/self/fd/N
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	return walkDir(fd, "", buf, fn)
}

func walkDir(fd int, rel string, buf []byte, fn func(string, string, bool) bool) error {
	defer unix.Close(fd)
	type entry struct {
		name string
		dir  bool
	}
	var subdirs []entry
	for {
		n, err := unix.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			break
		}
		for off := 0; off < n; {
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			off += reclen
			s := string(name)
			if s == "." || s == ".." {
				continue
			}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, s, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					typ = unix.DT_DIR
				}
			}
			isDir := typ == unix.DT_DIR
			if skip := fn(rel, s, isDir); isDir && !skip {
				subdirs = append(subdirs, entry{path.Join(rel, s), true})
			}
		}
	}
	for _, d := range subdirs {
		sub, err := unix.Openat(fd, path.Base(d.name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue // gone, or not ours to read: nothing there to mask
		}
		if err := walkDir(sub, d.name, buf, fn); err != nil {
			return err
		}
	}
	return nil
}
