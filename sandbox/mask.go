package sandbox

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// maskDenied hides the default-deny files of the workspace from the command: in the
// helper's own mount namespace (made private first, so nothing reaches the host),
// /dev/null is bound over each denied file and an empty read-only tmpfs over each
// denied directory. Landlock grants the workspace as a tree; this closes the files
// inside it that no command may read. Dependency and build directories are not
// walked (a denied file there is not masked).
func maskDenied(workspace string) error {
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return err
	}
	var masks []func() error
	err := filepath.WalkDir(workspace, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == workspace {
			return nil
		}
		rel, _ := filepath.Rel(workspace, p)
		if d.IsDir() && skipWalk[d.Name()] {
			return fs.SkipDir
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
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range masks {
		if err := m(); err != nil {
			return err
		}
	}
	return nil
}

// skipWalk are directories maskDenied does not walk.
var skipWalk = map[string]bool{"node_modules": true, "vendor": true, ".venv": true, "target": true, "dist": true, "__pycache__": true}
