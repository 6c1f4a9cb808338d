package fsm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/undo"
)

// A branch brings its files. Where each session has a workspace of its own, a
// branch's is made at its first tool call (so that making a branch stays one
// append): a copy of its source's workspace as it is then, with every change the
// source's log recorded after the branch point put back — the workspace as it was
// after the branch's turn. A change recorded as not revertible (beyond the caps)
// fails the call, naming the paths, and every call after it (the changes past the
// point only grow, so this process remembers the failure). Where sessions share a
// workspace (per user, or one for
// all), "restore" reverts the source's own turns after the point when the branch
// is made, as a revert to that turn would (its conflicts refuse the branch);
// "keep", the default there, leaves the files as they are.

// What a branch's workspace files are.
const (
	// BranchFilesRestore: as they were after the branch's turn (the default where
	// each session has its own).
	BranchFilesRestore = "restore"
	// BranchFilesKeep: as they are (the default where sessions share them; in a
	// workspace of its own, a copy of the source's as it is at the first call).
	BranchFilesKeep = "keep"
)

// ToolErrBranchFiles: a branch's workspace could not be made as at its branch
// point; the call did not run.
const ToolErrBranchFiles = "branch_files"

// branchRevert carries out files "restore" of a branch of src made at turn t for
// owner, in a workspace the two share: it reverts the source's turns after t and
// says which revert did ("" when there was nothing to revert, or the files are
// not shared).
func (e *Engine) branchRevert(ctx context.Context, src projection.Session, owner string, t projection.Turn, files string) (string, error) {
	switch files {
	case "", BranchFilesKeep, BranchFilesRestore:
	default:
		return "", events.FieldError(events.CodeInvalid, "files", "is %q: give %q or %q", files, BranchFilesRestore, BranchFilesKeep)
	}
	app := e.apps[src.App]
	if app == nil || app.Workspace == nil {
		if files == BranchFilesRestore {
			return "", events.FieldError(events.CodeInvalid, "files", "app %s has no workspace: there are no files to restore", src.App)
		}
		return "", nil
	}
	if files != BranchFilesRestore {
		return "", nil
	}
	switch app.Workspace.Scope() {
	case WorkspaceSession:
		return "", nil // made at the branch's first tool call
	case WorkspaceUser:
		if owner != src.Owner {
			return "", events.FieldError(events.CodeInvalid, "files", "the branch is %s's and the source %s's: their workspaces differ, so there is nothing of the source's to restore in the branch's", owner, src.Owner)
		}
	case WorkspaceShared:
		if !app.SharedBranchRestore {
			return "", events.FieldError(events.CodeInvalid, "files", "app %s's workspace is shared by all its sessions: reverting one session's turns there for a branch needs the app's policy.shared_branch_restore", src.App)
		}
	}
	r, err := e.revert(ctx, RevertRequest{Session: src.ID, ToTurn: t.ID, By: owner})
	if err != nil || r == nil {
		return "", err
	}
	return r.ID, nil
}

// branchFiles makes the workspace of the session the run is of when it is a branch,
// the app gives each session its own and it is not made yet.
func (r *run) branchFiles(ctx context.Context) error {
	ws := r.app.Workspace
	if ws == nil || r.parent == "" || ws.Scope() != WorkspaceSession {
		return nil
	}
	if made, ok := r.e.filesMade.Load(r.session); ok {
		if err, failed := made.(error); failed {
			return err
		}
		return nil
	}
	return r.e.makeBranchFiles(ctx, r.app, r.session)
}

// filesMaking serialises the making of one session's workspace in this process.
type filesMaking struct {
	mu   sync.Mutex
	busy map[string]*sync.Mutex
}

func (f *filesMaking) lock(session string) func() {
	f.mu.Lock()
	if f.busy == nil {
		f.busy = map[string]*sync.Mutex{}
	}
	m := f.busy[session]
	if m == nil {
		m = &sync.Mutex{}
		f.busy[session] = m
	}
	f.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// makeBranchFiles makes session's workspace folder if it is a branch whose folder
// is not made: first its source's (a branch of a branch), then its own from it.
func (e *Engine) makeBranchFiles(ctx context.Context, app *App, session string) error {
	unlock := e.filesMaking.lock(session)
	defer unlock()
	if made, ok := e.filesMade.Load(session); ok {
		if err, failed := made.(error); failed {
			return err
		}
		return nil
	}
	s, err := e.store.Session(ctx, session)
	if err != nil {
		return err
	}
	if s.ParentID != "" {
		if err := e.branchFolder(ctx, app, s); err != nil {
			var bf *BranchFilesError
			if errors.As(err, &bf) {
				e.filesMade.Store(session, err) // it can only stay so
			}
			return err
		}
	}
	e.filesMade.Store(session, true)
	return nil
}

func (e *Engine) branchFolder(ctx context.Context, app *App, s projection.Session) error {
	src, err := e.store.Session(ctx, s.ParentID)
	if err != nil {
		return fmt.Errorf("the session %s was branched from: %w", s.ParentID, err)
	}
	if err := e.makeBranchFiles(ctx, app, src.ID); err != nil {
		return err
	}
	folder, err := app.Workspace.Of(s.ID, s.Owner)
	if err != nil {
		return err
	}
	from, err := app.Workspace.Of(src.ID, src.Owner)
	if err != nil {
		return err
	}
	files, err := e.branchedFiles(ctx, s.ID)
	if err != nil {
		return err
	}
	if files != BranchFilesKeep {
		// What cannot be put back is known from the log before anything is copied.
		if _, err := e.branchChanges(ctx, src.ID, s.ParentSeq, from); err != nil {
			return err
		}
	}
	return app.Workspace.Branch(ctx, folder, from, func() ([]RestoreTarget, error) {
		if files == BranchFilesKeep {
			return nil, nil
		}
		return e.branchTargets(ctx, src.ID, s.ParentSeq, from)
	})
}

// branchedFiles is what the branch session asked of its files.
func (e *Engine) branchedFiles(ctx context.Context, session string) (string, error) {
	evs, err := e.store.Events(ctx, session, 0)
	if err != nil {
		return "", err
	}
	if len(evs) == 0 || evs[0].Type != events.TypeSessionBranched {
		return "", events.Errorf(events.CodeInternal, "session %s has a parent and no SessionBranched first", session)
	}
	sb, err := events.DecodeAs[*events.SessionBranched](evs[0])
	if err != nil {
		return "", err
	}
	return sb.Files, nil
}

// branchTargets are what puts the folder of session back as it was at seq: the
// changes its log recorded there after seq, taken back newest first.
func (e *Engine) branchTargets(ctx context.Context, session string, seq int64, folder string) ([]RestoreTarget, error) {
	targets, err := e.branchChanges(ctx, session, seq, folder)
	if err != nil {
		return nil, err
	}
	out := make([]RestoreTarget, len(targets))
	for i, t := range targets {
		out[i].Target = t
		if t.Want != nil && t.Want.Kind == events.FileKindFile {
			if out[i].Content, err = e.store.Content(ctx, session, t.Want.Hash); err != nil {
				return nil, fmt.Errorf("the content %s was of %s: %w", t.Want.Hash, t.Path, err)
			}
		}
	}
	return out, nil
}

// branchChanges is what puts back the changes the log of session recorded in
// folder after seq; a change that cannot be put back is a *BranchFilesError.
func (e *Engine) branchChanges(ctx context.Context, session string, seq int64, folder string) ([]undo.Target, error) {
	evs, err := e.store.Events(ctx, session, seq)
	if err != nil {
		return nil, err
	}
	var changes []events.FileChange
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeFilesChanged:
			fc, err := events.DecodeAs[*events.FilesChanged](ev)
			if err != nil {
				return nil, err
			}
			if fc.Workspace == folder {
				changes = append(changes, fc.Changes...)
			}
		case events.TypeWorkspaceReverted:
			wr, err := events.DecodeAs[*events.WorkspaceReverted](ev)
			if err != nil {
				return nil, err
			}
			if wr.Workspace == folder {
				changes = append(changes, wr.Changes...)
			}
		}
	}
	targets, bad := undo.Plan(changes)
	if len(bad) > 0 {
		return nil, &BranchFilesError{Session: session, Changes: bad}
	}
	return targets, nil
}

// BranchFilesError is a branch whose files cannot be put back as at its branch
// point: changes its source made after it were recorded as not revertible.
type BranchFilesError struct {
	Session string
	Changes []events.FileChange
}

func (e *BranchFilesError) Error() string {
	msg := fmt.Sprintf("the branch's files cannot be made as they were at its branch point: %d paths session %s changed after it cannot be put back:", len(e.Changes), e.Session)
	for i, c := range e.Changes {
		if i == 10 {
			return msg + fmt.Sprintf(" and %d more", len(e.Changes)-i)
		}
		msg += fmt.Sprintf(" %s (%s);", c.Path, c.NotRevertible)
	}
	return msg
}

// branchFilesError is the detail of the tool error of a call whose branch's files
// could not be made.
func branchFilesError(err error) string {
	var bf *BranchFilesError
	if errors.As(err, &bf) {
		return bf.Error()
	}
	return "the branch's files could not be made as they were at its branch point: " + err.Error()
}
