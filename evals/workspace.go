package evals

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// checkWorkspace refuses a suite whose runs need a workspace of their own that the
// runner cannot give: a seed folder that is not one, or an app whose workspaces are
// not made per session under the runner's root.
func (r *Runner) checkWorkspace(app *fsm.App, s *Suite) error {
	if s.Workspace == "" || r.Replay != nil {
		return nil
	}
	seed := filepath.Join(s.Dir, s.Workspace)
	if st, err := os.Stat(seed); err != nil || !st.IsDir() {
		return events.FieldError(events.CodeInvalid, "workspace", "%s is not a folder", seed)
	}
	switch {
	case app.Workspace == nil:
		return events.FieldError(events.CodeInvalid, "workspace", "app %s has no workspace: none of its agents uses the built-in file tools", s.App)
	case r.Workspaces == "" || app.Workspace.Scope() != fsm.WorkspaceSession:
		return events.FieldError(events.CodeInvalid, "workspace", "app %s's workspaces are not per session under the runner's root (turnlog eval makes them so)", s.App)
	}
	return nil
}

// seedWorkspace copies the suite's workspace folder into the session's own before
// its first turn: folders and files with their permissions, and symbolic links as
// they are — each to a path within the folder (a link that leads out of it is
// refused, naming it).
func (r *Runner) seedWorkspace(app *fsm.App, s *Suite, session string) error {
	if s.Workspace == "" {
		return nil
	}
	folder, err := app.Workspace.Of(session, r.owner())
	if err != nil {
		return err
	}
	seed, err := filepath.EvalSymlinks(filepath.Join(s.Dir, s.Workspace)) // the folder a link names, walked as itself
	if err != nil {
		return err
	}
	dst := filepath.Join(r.Workspaces, folder)
	return filepath.WalkDir(seed, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(seed, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.MkdirAll(to, 0o700); err != nil {
				return err
			}
			return os.Chmod(to, info.Mode().Perm()|0o700) // its own permissions, and the owner's to fill it
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if resolved := filepath.Join(filepath.Dir(rel), target); filepath.IsAbs(target) || !filepath.IsLocal(resolved) {
				return fmt.Errorf("workspace %s: link %s points outside it (%s): a run's workspace holds links to its own files only", seed, rel, target)
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			return copyFile(path, to, info.Mode().Perm())
		}
		return fmt.Errorf("workspace %s: %s is neither a file, a folder nor a link", seed, rel)
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
