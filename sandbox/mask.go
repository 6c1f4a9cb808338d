package sandbox

import (
	"path/filepath"
	"strings"
	"syscall"

	"github.com/turnlog/turnlog/policy"
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
//
// The tree is read at scan — the real workspace, which the command's view shows —
// and the masks are mounted at the same paths under workspace.
func maskDenied(workspace, scan string) error {
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return err
	}
	var masks []func() error
	deniedInodes := map[[2]uint64]bool{}
	err := walkTree(scan, func(parent, name string, dir bool) bool {
		isGit := strings.EqualFold(name, ".git")
		if !isGit && !policy.MayBeDenied(name) {
			return false // most entries: nothing to build, nothing to check
		}
		rel := filepath.Join(parent, name)
		p := filepath.Join(workspace, rel)
		if isGit {
			masks = append(masks, func() error { return bindReadOnly(p) })
		}
		if denied(rel) == "" && (!dir || denied(rel+"/x") == "") {
			return false
		}
		if dir {
			masks = append(masks, func() error {
				return syscall.Mount("tmpfs", p, "tmpfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, "size=4k")
			})
			return true
		}
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(scan, rel), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
			masks = append(masks, func() error { return syscall.Mount("/dev/null", p, "", syscall.MS_BIND, "") })
			if st.Nlink > 1 {
				deniedInodes[[2]uint64{st.Dev, st.Ino}] = true
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	if len(deniedInodes) > 0 {
		if masks, err = maskLinks(workspace, scan, deniedInodes, masks); err != nil {
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
func maskLinks(workspace, scan string, inodes map[[2]uint64]bool, masks []func() error) ([]func() error, error) {
	err := walkTree(scan, func(parent, name string, dir bool) bool {
		rel := filepath.Join(parent, name)
		if dir || denied(rel) != "" {
			return false // a directory, or masked by name already
		}
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(scan, rel), &st) == nil && st.Nlink > 1 && inodes[[2]uint64{st.Dev, st.Ino}] {
			p := filepath.Join(workspace, rel)
			masks = append(masks, func() error { return syscall.Mount("/dev/null", p, "", syscall.MS_BIND, "") })
		}
		return false
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
