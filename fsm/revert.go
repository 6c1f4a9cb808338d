package fsm

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/undo"
)

// A revert puts a session's workspace files back as they were before turns (or
// before an earlier revert), from the undo log: the FilesChanged its turns' calls
// recorded say what each path was, and the store holds the contents. The files are
// restored by the app's Workspace (the sandbox, under the workspace's lock, whole or
// not at all), then the revert is recorded as a WorkspaceReverted with what it
// changed — itself a change a later revert can undo — and only then is what it
// replaced let go: a crash in between takes it back.

// Workspace is the port of an app's workspace files (the workspace tools implement
// it).
type Workspace interface {
	// Of is the folder of the workspace of session (of user) below the workspaces'
	// root: sessions with one folder share their files.
	Of(session, user string) (string, error)
	// Restore puts targets back in the workspace folder, the restore's journal naming
	// the revert at path of session. With a path not as a target expects, and without
	// force, it changes nothing and returns the conflicts.
	Restore(ctx context.Context, folder, session, path string, targets []RestoreTarget, force bool) (Restored, []RevertConflict, error)
	// ForgetSession removes what the workspaces keep of an erased session alone: its
	// own folder (per-session scope) and its commands' home. It says how many folders
	// it removed.
	ForgetSession(session string) (int, error)
	// Scope is whose each folder is.
	Scope() WorkspaceScope
	// Unread makes paths unread for session: what its file tools remember of them
	// here (a revert put them back, maybe on another node) is forgotten; nil paths
	// forget all (the session moved on elsewhere: the log says what it read).
	Unread(session string, paths []string)
	// Branch makes folder, a branch's own (per-session scope), from the folder from
	// as it is now with the targets plan returns forced onto it, whole or not at
	// all; plan is called once the copy is taken. A folder made already is left as
	// it is, and plan is not called.
	Branch(ctx context.Context, folder, from string, plan func() ([]RestoreTarget, error)) error
}

// WorkspaceScope is whose a workspace folder is.
type WorkspaceScope string

const (
	// WorkspaceUser: each user of the app has one.
	WorkspaceUser WorkspaceScope = "user"
	// WorkspaceSession: each session has one; a branch's is made at its first tool
	// call from its source's (see Branch).
	WorkspaceSession WorkspaceScope = "session"
	// WorkspaceShared: one for every user and session of the app.
	WorkspaceShared WorkspaceScope = "shared"
)

// RestoreTarget is one path to put back, with a file's content.
type RestoreTarget struct {
	undo.Target
	Content []byte
}

// Restored is a restore done and not yet settled.
type Restored interface {
	// Changes are what the restore changed, as a FilesChanged's are, and the
	// contents they name.
	Changes() ([]events.FileChange, []events.Content, error)
	// Settle keeps the restore once its record is durable, or takes it back.
	Settle(recorded bool)
}

// RevertConflict is a path not as a revert expects: each side a content's hash,
// "absent", "a directory" or "a symlink to <target>".
type RevertConflict struct {
	Path     string `json:"path"`
	Expected string `json:"expected"`
	Found    string `json:"found"`
}

// RevertConflictError is a revert refused for its conflicts: nothing was changed.
type RevertConflictError struct{ Conflicts []RevertConflict }

func (e *RevertConflictError) Error() string {
	msg := fmt.Sprintf("%d paths were changed since (by later turns, other sessions or anything else), so nothing was reverted; send force to overwrite them:", len(e.Conflicts))
	for i, c := range e.Conflicts {
		if i == 10 {
			return msg + fmt.Sprintf(" and %d more", len(e.Conflicts)-i)
		}
		msg += fmt.Sprintf(" %s (expected %s, found %s);", c.Path, c.Expected, c.Found)
	}
	return msg
}

// Reverted is a revert recorded.
type Reverted struct {
	ID      string   `json:"revert_id"`
	Session string   `json:"session_id"`
	Turns   []string `json:"turns,omitempty"`
	Revert  string   `json:"revert,omitempty"`
	// Paths are the first MaxListedRestored paths it changed; Count all of them.
	Paths []string `json:"paths"`
	Count int      `json:"count"`
	// Overwritten are the conflicts a forced revert overwrote.
	Overwritten []RevertConflict `json:"overwritten,omitempty"`
	Seq         int64            `json:"seq"`
}

// MaxListedRestored caps Reverted.Paths.
const MaxListedRestored = 50

// RevertPath is the path of the WorkspaceReverted of a revert.
func RevertPath(id string) string { return "revert/" + id }

// Revert reverts what req names and records it. Errors: invalid, not_found,
// conflict (a turn of a session on the workspace runs; already reverted; nothing to
// revert; a change that cannot be reverted), revert_conflict
// (a *RevertConflictError), internal.
func (e *Engine) Revert(ctx context.Context, req RevertRequest) (*Reverted, error) {
	out, err := e.revert(ctx, req)
	if err == nil && out == nil {
		if req.ToTurn != "" {
			return nil, events.Errorf(events.CodeConflict, "no turn after %s changed files that are not reverted already: there is nothing to revert", req.ToTurn)
		}
		return nil, events.Errorf(events.CodeConflict, "every path is already as the revert would put it: nothing was changed")
	}
	return out, err
}

// revert is Revert, with nil and no error when there is nothing to revert.
func (e *Engine) revert(ctx context.Context, req RevertRequest) (*Reverted, error) {
	ctx = context.WithoutCancel(ctx)
	if req.By == "" {
		return nil, events.FieldError(events.CodeInvalid, "by", "is empty: a revert is someone's")
	}
	s, err := e.store.Session(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	app := e.apps[s.App]
	if app == nil || app.Workspace == nil {
		return nil, events.Errorf(events.CodeConflict, "app %s has no workspace: there are no files to revert", s.App)
	}
	folder, err := app.Workspace.Of(s.ID, s.Owner)
	if err != nil {
		return nil, err
	}
	h, unlock, err := e.lock(req.Session)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ctx = h.bound(ctx)
	if err := e.workspaceIdle(ctx, app, folder); err != nil {
		return nil, err
	}
	evs, err := e.store.Events(ctx, req.Session, 0)
	if err != nil {
		return nil, err
	}
	ul, err := readUndoLog(evs)
	if err != nil {
		return nil, err
	}
	sel, err := ul.selectRevert(req)
	if err != nil || (sel.revert == "" && len(sel.turns) == 0) {
		return nil, err
	}
	for f := range sel.workspaces {
		if f != folder {
			return nil, events.Errorf(events.CodeConflict, "the changes were made in the workspace %q and the session's is %q now (its app's workspace scope changed): they are not reverted there", f, folder)
		}
	}
	targets, bad := undo.Plan(sel.changes)
	if len(bad) > 0 {
		return nil, notRevertibleError(bad)
	}
	rts := make([]RestoreTarget, len(targets))
	for i, t := range targets {
		rts[i].Target = t
		if t.Want != nil && t.Want.Kind == events.FileKindFile {
			if rts[i].Content, err = e.store.Content(ctx, req.Session, t.Want.Hash); err != nil {
				return nil, fmt.Errorf("the content %s was of %s: %w", t.Want.Hash, t.Path, err)
			}
		}
	}
	id := e.opts.NewID()
	path := RevertPath(id)
	restored, conflicts, err := app.Workspace.Restore(ctx, folder, req.Session, path, rts, req.Force)
	if err != nil {
		return nil, err
	}
	if restored == nil {
		if len(conflicts) > 0 {
			return nil, &events.Error{Code: events.CodeRevertConflict, Message: "the revert was refused", Err: &RevertConflictError{Conflicts: conflicts}}
		}
		return nil, nil
	}
	changes, contents, err := restored.Changes()
	if err != nil {
		restored.Settle(false)
		return nil, err
	}
	wr := &events.WorkspaceReverted{RevertID: id, Turns: sel.turns, Revert: sel.revert, By: req.By, Forced: len(conflicts) > 0,
		Workspace: folder, Changes: changes}
	ev, err := events.New("", path, wr)
	if err == nil {
		ev.Contents = contents
		_, err = e.appendEvents(ctx, req.Session, evs[len(evs)-1].Seq, []events.Event{ev}, false)
	}
	restored.Settle(err == nil)
	if err != nil {
		return nil, err
	}
	out := revertedOf(req.Session, evs[len(evs)-1].Seq+1, wr)
	out.Overwritten = conflicts
	return out, nil
}

// RevertedOf is the revert a WorkspaceReverted event records (the conflicts a
// forced one overwrote are not in the log: only that it was forced).
func RevertedOf(ev events.Event) (*Reverted, error) {
	wr, err := events.DecodeAs[*events.WorkspaceReverted](ev)
	if err != nil {
		return nil, err
	}
	return revertedOf(ev.Session, ev.Seq, wr), nil
}

func revertedOf(session string, seq int64, wr *events.WorkspaceReverted) *Reverted {
	out := &Reverted{ID: wr.RevertID, Session: session, Turns: wr.Turns, Revert: wr.Revert, Count: len(wr.Changes), Seq: seq, Paths: []string{}}
	for _, c := range wr.Changes {
		if len(out.Paths) == MaxListedRestored {
			break
		}
		out.Paths = append(out.Paths, c.Path)
	}
	return out
}

// workspaceIdle refuses while a turn of any session on the app's workspace folder
// runs (here or on another node): its commands would meet the revert's files.
func (e *Engine) workspaceIdle(ctx context.Context, app *App, folder string) error {
	running, err := e.store.RunningTurns(ctx)
	if err != nil {
		return err
	}
	for _, t := range running {
		s, err := e.store.Session(ctx, t.Session)
		if errors.Is(err, context.Canceled) || err != nil {
			continue // gone meanwhile
		}
		if s.App != app.Name {
			continue
		}
		if f, err := app.Workspace.Of(s.ID, s.Owner); err == nil && f == folder {
			return events.Errorf(events.CodeConflict, "turn %s of session %s runs on this workspace: a revert waits until no turn does", t.ID, t.Session)
		}
	}
	return nil
}
