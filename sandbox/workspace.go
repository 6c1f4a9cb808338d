package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/turnlog/turnlog/policy"
)

// beforeOpen, set only by tests, runs between a path's check and its open: the
// moment an attacker would swap a symlink.
var beforeOpen func(rel string)

// PathError says why a path may not be used.
type PathError struct {
	Path   string
	Reason string
}

func (e *PathError) Error() string { return fmt.Sprintf("path %s: %s", e.Path, e.Reason) }

// Workspace is the directory tools work in.
type Workspace struct {
	dir  string // absolute, symlinks resolved
	root *os.Root
}

// OpenWorkspace opens dir (which must exist) as a workspace.
func OpenWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	return &Workspace{dir: real, root: root}, nil
}

// Dir is the workspace's absolute, resolved directory.
func (w *Workspace) Dir() string { return w.dir }

// FS is the workspace as a file system (walking it never leaves the workspace).
func (w *Workspace) FS() fs.FS { return w.root.FS() }

// Close releases the workspace's directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Rel checks a path a tool names and returns it relative to the workspace: inside
// it (after `..` and absolute paths are resolved lexically), not on the default-deny
// list, and — if it exists — resolving through symlinks to a file inside and not
// denied either.
func (w *Workspace) Rel(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", &PathError{Path: p, Reason: "is empty"}
	}
	abs := p
	if !filepath.IsAbs(p) {
		abs = filepath.Join(w.dir, p)
	}
	rel, ok := within(w.dir, filepath.Clean(abs))
	if !ok {
		return "", &PathError{Path: p, Reason: "is outside the workspace"}
	}
	if why := denied(rel); why != "" {
		return "", &PathError{Path: p, Reason: why}
	}
	if real, err := filepath.EvalSymlinks(filepath.Join(w.dir, rel)); err == nil {
		rrel, ok := within(w.dir, real)
		if !ok {
			return "", &PathError{Path: p, Reason: "resolves through a symlink to outside the workspace"}
		}
		if why := denied(rrel); why != "" {
			return "", &PathError{Path: p, Reason: "resolves through a symlink to " + rrel + ", which " + why}
		}
	}
	return rel, nil
}

// Open opens a file for reading, with the checks of Rel before and after the open.
func (w *Workspace) Open(p string) (*os.File, string, error) {
	return w.OpenFile(p, os.O_RDONLY, 0)
}

// OpenFile opens a file inside the workspace; the file actually opened is checked
// again, so a symlink swapped between the check and the open changes nothing.
func (w *Workspace) OpenFile(p string, flag int, perm fs.FileMode) (*os.File, string, error) {
	rel, err := w.Rel(p)
	if err != nil {
		return nil, "", err
	}
	if beforeOpen != nil {
		beforeOpen(rel)
	}
	f, err := w.root.OpenFile(rel, flag, perm)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
			return nil, "", &PathError{Path: p, Reason: "resolves through a symlink to outside the workspace"}
		}
		return nil, "", err
	}
	if err := w.checkOpened(f, p); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, rel, nil
}

// checkOpened checks the file a descriptor really refers to.
func (w *Workspace) checkOpened(f *os.File, p string) error {
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return nil // no /proc: os.Root alone keeps the open inside the workspace
	}
	rel, ok := within(w.dir, real)
	if !ok {
		return &PathError{Path: p, Reason: "opened a file outside the workspace"}
	}
	if why := denied(rel); why != "" {
		return &PathError{Path: p, Reason: "opened " + rel + ", which " + why}
	}
	return nil
}

// MkdirAll makes the directories of a relative path inside the workspace.
func (w *Workspace) MkdirAll(rel string) error {
	return w.root.MkdirAll(rel, 0o755)
}

func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// denied says why a workspace-relative path is on the default-deny list.
func denied(rel string) string {
	for _, pat := range policy.DefaultDenied {
		if m, _ := doublestar.Match(pat, rel); m {
			return fmt.Sprintf("is denied by default (%s)", pat)
		}
	}
	return ""
}
