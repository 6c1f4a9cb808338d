package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/turnlog/turnlog/policy"
	"golang.org/x/sys/unix"
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
// list, and resolving through symlinks — the path itself if it exists, else its
// deepest existing ancestor — to a place inside and not denied either, so that a
// file about to be created is checked where it would really land.
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
	if ownedByTurnlog(rel) {
		return "", &PathError{Path: p, Reason: "is in " + stagingDirName + ", turnlog's own directory"}
	}
	real, ok := w.resolve(rel)
	if !ok {
		return "", &PathError{Path: p, Reason: "resolves through a symlink to outside the workspace (or to nothing)"}
	}
	if real != rel {
		if why := denied(real); why != "" {
			return "", &PathError{Path: p, Reason: "resolves through a symlink to " + real + ", which " + why}
		}
		if ownedByTurnlog(real) {
			return "", &PathError{Path: p, Reason: "resolves through a symlink to " + real + ", in turnlog's own " + stagingDirName}
		}
	}
	return rel, nil
}

// ownedByTurnlog says whether a workspace-relative path is or lies in .turnlog at
// the workspace's top (see staging.go).
func ownedByTurnlog(rel string) bool {
	return rel == stagingDirName || strings.HasPrefix(rel, stagingDirName+string(filepath.Separator))
}

// WritableRel is Rel for a path a tool writes to (or creates): besides Rel's checks,
// nothing in a .git — the path's or, through symlinks, the place it lands in — since
// git's files are written only by git, inside the sandbox, where they are read-only
// too; and no .git of a new repository either.
func (w *Workspace) WritableRel(p string) (string, error) {
	rel, err := w.Rel(p)
	if err != nil {
		return "", err
	}
	real, _ := w.resolve(rel)
	for _, r := range []string{rel, real} {
		for _, part := range strings.Split(r, string(filepath.Separator)) {
			if strings.EqualFold(part, ".git") {
				return "", &PathError{Path: p, Reason: "is inside .git, which no tool writes (git's config, hooks and pointers would run code when git runs)"}
			}
		}
	}
	return rel, nil
}

// resolve is where rel really lands: rel itself through symlinks if it exists, else
// its deepest existing ancestor's resolution joined with the rest; false if that is
// outside the workspace, or if a symlink on the way leads nowhere (a dangling one
// would be followed by a create, to wherever it names: .git/commondir, say).
func (w *Workspace) resolve(rel string) (string, bool) {
	head, rest := filepath.Join(w.dir, rel), ""
	for {
		real, err := filepath.EvalSymlinks(head)
		if err == nil {
			return within(w.dir, filepath.Join(real, rest))
		}
		if _, lerr := os.Lstat(head); lerr == nil {
			return "", false // it exists, and cannot be resolved: a dangling or looping symlink
		}
		if head == w.dir || head == "/" {
			return rel, true
		}
		rest = filepath.Join(filepath.Base(head), rest)
		head = filepath.Dir(head)
	}
}

// RealRel is where the workspace-relative rel really lands, through symlinks inside
// the workspace (what a writer writes: the executor follows none). Errors: a path
// that leaves the workspace, or a dangling or looping symlink on the way.
func (w *Workspace) RealRel(rel string) (string, error) {
	real, ok := w.resolve(rel)
	if !ok {
		return "", &PathError{Path: rel, Reason: "leads outside the workspace or through a symlink to nowhere"}
	}
	if real == "" {
		real = "."
	}
	return real, nil
}

// Open opens a file for reading, with the checks of Rel before and after the open.
func (w *Workspace) Open(p string) (*os.File, string, error) {
	return w.OpenFile(p, os.O_RDONLY, 0)
}

// OpenFile opens a file inside the workspace; the file actually opened is checked
// again, so a symlink swapped between the check and the open changes nothing.
func (w *Workspace) OpenFile(p string, flag int, perm fs.FileMode) (*os.File, string, error) {
	check := w.Rel
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		check = w.WritableRel
	}
	rel, err := check(p)
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
	if err := w.checkOpened(f, p, check); err != nil {
		f.Close()
		return nil, "", err
	}
	return f, rel, nil
}

// checkOpened checks the file a descriptor really refers to — by the name it was
// opened under and, when it has other names (hard links), by every denied file of
// the workspace that is the same file.
func (w *Workspace) checkOpened(f *os.File, p string, check func(string) (string, error)) error {
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return nil // no /proc: os.Root alone keeps the open inside the workspace
	}
	rel, ok := within(w.dir, real)
	if !ok {
		return &PathError{Path: p, Reason: "opened a file outside the workspace"}
	}
	if _, err := check(rel); err != nil { // the file really opened, as the path asked for was
		return err
	}
	if why := denied(rel); why != "" {
		return &PathError{Path: p, Reason: "opened " + rel + ", which " + why}
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	// By the name asked for too: a credential file's name as a symlink to another.
	for _, name := range []string{filepath.Base(rel), filepath.Base(p)} {
		if fi.Mode().IsRegular() && policy.CredentialFile(name) {
			if why := contentCredentials(int(f.Fd()), name); why != "" {
				return &PathError{Path: p, Reason: why + ", which no tool reads"}
			}
		}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
		if other := w.deniedLinkOf(st); other != "" {
			why := denied(other)
			if why == "" {
				why = w.credentials(other)
			}
			return &PathError{Path: p, Reason: "is a hard link to " + other + ", which " + why}
		}
	}
	return nil
}

// deniedLinkOf is a denied file of the workspace that is the file st describes (one
// of its other names), or "". It walks the workspace: only a file with several names
// costs that.
func (w *Workspace) deniedLinkOf(st *syscall.Stat_t) string {
	found := ""
	fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return nil
		}
		if denied(p) == "" && (!policy.CredentialFile(d.Name()) || w.credentials(p) == "") {
			return nil
		}
		var other syscall.Stat_t
		if syscall.Lstat(filepath.Join(w.dir, p), &other) == nil && other.Dev == st.Dev && other.Ino == st.Ino {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// credentials says why the workspace's credential file rel holds credentials, or "".
func (w *Workspace) credentials(rel string) string {
	fd, err := unix.Open(w.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	return holdsCredentials(fd, rel, filepath.Base(rel))
}

// MkdirAll makes the directories of a path inside the workspace, checked as a path
// written to first.
func (w *Workspace) MkdirAll(p string) error {
	rel, err := w.WritableRel(p)
	if err != nil {
		return err
	}
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
	if pat := policy.DeniedBy(rel); pat != "" {
		return fmt.Sprintf("is denied by default (%s)", pat)
	}
	return ""
}

// Lock takes the workspace's writer lock, which every writer of it holds while it
// writes — applies of commands' changes (in the helper), the file tools, reverts —,
// between processes too (serve and turnlog run on one folder). unlock lets it go.
func (w *Workspace) Lock() (unlock func(), err error) { return lockDir(w.dir) }

// CheckWrite refuses a write of the file rel (and of the directories it needs) that
// would make a directory of the workspace a git repository, or change the git files
// of one it is: the repository test an apply runs on the state it leaves. The caller
// holds the lock.
func (w *Workspace) CheckWrite(rel string) error {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, name := range parts {
		if !gitDirNames[strings.ToLower(name)] {
			continue
		}
		dir := filepath.Join(append([]string{w.dir}, parts[:i]...)...)
		made := kindDir
		if i == len(parts)-1 {
			made = kindFile
		}
		repository := looksLikeRepository(func(n string) kind {
			if strings.EqualFold(n, name) {
				return made
			}
			fi, err := os.Lstat(filepath.Join(dir, n))
			switch {
			case err != nil:
				return kindNone
			case fi.IsDir():
				return kindDir
			case fi.Mode()&fs.ModeSymlink != 0:
				return kindSymlink
			}
			return kindFile
		})
		if repository {
			return &PathError{Path: rel, Reason: "would make " + filepath.Join(parts[:i]...) + " a git repository, or change one's git files (git would run its config when someone runs git there)"}
		}
	}
	return nil
}
