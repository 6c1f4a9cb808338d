package sandbox

import (
	"errors"
	"path/filepath"
	"syscall"
)

// This file runs in the helper: the masks turnlog found (mask.go) mounted in the
// command's view.

// applyMasks mounts the masks at their paths under workspace, in the helper's own
// mount namespace (private since the root was built: nothing reaches the host). A
// .git is bound read-only before the masks inside it. A path gone since it was found
// is skipped; one that cannot be masked fails the call closed.
func applyMasks(workspace string, masks []Mask) error {
	for _, m := range masks {
		p := filepath.Join(workspace, m.Rel)
		var err error
		switch m.Kind {
		case maskFile:
			err = bindReadOnlyFrom(emptyFile, p)
		case maskDir:
			err = syscall.Mount("tmpfs", p, "tmpfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, "size=4k")
		case maskGit:
			err = bindReadOnly(p)
		}
		switch {
		case errors.Is(err, syscall.ENOENT):
			// Gone since it was found: nothing left there to hide.
		case err != nil:
			return &PathError{Path: m.Rel, Reason: "cannot be masked: " + err.Error()}
		}
	}
	return nil
}

// bindReadOnly binds p over itself read-only.
func bindReadOnly(p string) error { return bindReadOnlyFrom(p, p) }

// bindReadOnlyFrom binds src over p read-only.
func bindReadOnlyFrom(src, p string) error {
	if err := syscall.Mount(src, p, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return err
	}
	return syscall.Mount("", p, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, "")
}
