package sandbox

import (
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// maskDenied closes, in the helper's own mount namespace (made private first, so
// nothing reaches the host), what a command may not touch in its workspace, at any
// depth — dependency and build directories included:
//   - each default-deny file reads as empty (/dev/null is bound over it) and each
//     denied directory as an empty read-only tmpfs; a hard link to a denied file,
//     under any name, is closed the same way;
//   - every .git (a repository's directory, or the file that points to one) is bound
//     read-only over itself: git's config, hooks and pointers to other directories
//     cannot be written, and .git cannot be renamed or replaced (it is a mount point).
//
// Landlock grants the workspace as a tree; this closes the parts of it no command
// may read or change. The masks are mount points: renaming or deleting them fails.
func maskDenied(workspace string) error {
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return err
	}
	var masks []func() error
	deniedInodes := map[[2]uint64]bool{}
	linked := false // a denied file has other names
	err := filepath.WalkDir(workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == workspace {
			return nil
		}
		rel, _ := filepath.Rel(workspace, p)
		if strings.EqualFold(d.Name(), ".git") {
			masks = append(masks, func() error { return bindReadOnly(p) })
		}
		if denied(rel) == "" && (!d.IsDir() || denied(rel+"/x") == "") {
			return nil
		}
		switch {
		case d.IsDir():
			masks = append(masks, func() error {
				return syscall.Mount("tmpfs", p, "tmpfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, "size=4k")
			})
			return fs.SkipDir
		case d.Type().IsRegular():
			masks = append(masks, func() error { return syscall.Mount("/dev/null", p, "", syscall.MS_BIND, "") })
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) == nil && st.Nlink > 1 {
				deniedInodes[[2]uint64{st.Dev, st.Ino}] = true
				linked = true
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if linked {
		if masks, err = maskLinks(workspace, deniedInodes, masks); err != nil {
			return err
		}
	}
	for _, m := range masks {
		if err := m(); err != nil {
			return err
		}
	}
	return nil
}

// maskLinks adds a mask for every other name of a denied file (its hard links): only
// when a denied file has more than one name is every file's inode looked at.
func maskLinks(workspace string, inodes map[[2]uint64]bool, masks []func() error) ([]func() error, error) {
	err := filepath.WalkDir(workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(workspace, p)
		if denied(rel) != "" {
			return nil // masked by name already
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil && st.Nlink > 1 && inodes[[2]uint64{st.Dev, st.Ino}] {
			masks = append(masks, func() error { return syscall.Mount("/dev/null", p, "", syscall.MS_BIND, "") })
		}
		return nil
	})
	return masks, err
}

// bindReadOnly binds p over itself read-only.
func bindReadOnly(p string) error {
	if err := syscall.Mount(p, p, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return err
	}
	return syscall.Mount("", p, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, "")
}
