package workspacetools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

// Branch implements fsm.Workspace through sandbox.BranchWorkspace: folder, a
// branch's own, is made from the folder from as it is now with the targets plan
// returns forced onto it. A folder made already is left alone.
func (w *Workspaces) Branch(ctx context.Context, folder, from string, plan func() ([]fsm.RestoreTarget, error)) error {
	if w.scope != ScopeSession || folder == "" || folder == from {
		return fmt.Errorf("the workspace %q is not a session's own: a branch's files are made only in one", folder)
	}
	dir := filepath.Join(w.root.Dir(), filepath.FromSlash(folder))
	switch fi, err := os.Lstat(dir); {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("workspace %s is not a directory of its own", folder)
	case !os.IsNotExist(err):
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	err := sandbox.BranchWorkspace(ctx, filepath.Join(w.root.Dir(), filepath.FromSlash(from)), dir, func() ([]sandbox.Restore, error) {
		targets, err := plan()
		if err != nil {
			return nil, err
		}
		return restoresOf(targets)
	})
	if errors.Is(err, sandbox.ErrBranchMade) {
		return nil
	}
	return err
}
