package sandbox

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirent is one entry of a directory.
type dirent struct {
	name    string
	dir     bool
	regular bool // a regular file (not a directory, symlink or device)
}

// readDir reads the directory fd with getdents64, taking each entry's type from it
// (fstatat only where the file system leaves it unknown): a workspace of tens of
// thousands of files is read in milliseconds, with no stat per file.
func readDir(fd int, buf []byte) ([]dirent, error) {
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
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
				if unix.Fstatat(fd, s, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					switch st.Mode & unix.S_IFMT {
					case unix.S_IFDIR:
						typ = unix.DT_DIR
					case unix.S_IFREG:
						typ = unix.DT_REG
					}
				}
			}
			out = append(out, dirent{s, typ == unix.DT_DIR, typ == unix.DT_REG})
		}
	}
}
