package workspacetools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

var _ fsm.Workspace = (*Workspaces)(nil)

// Of implements fsm.Workspace: the folder below the root of the workspace of
// session's calls. It makes nothing: a branch's folder is made by Branch.
func (w *Workspaces) Of(session, user string) (string, error) {
	rel, err := w.relOf(session, user)
	return filepath.ToSlash(rel), err
}

// Restore implements fsm.Workspace through sandbox.RestoreFiles: the restore's
// journal is tagged as a call's apply is (ApplyTag), with the revert's path, so a
// crash before the revert is recorded takes it back at the next start.
func (w *Workspaces) Restore(_ context.Context, folder, session, path string, targets []fsm.RestoreTarget, force bool) (fsm.Restored, []fsm.RevertConflict, error) {
	dir := filepath.Join(w.root.Dir(), filepath.FromSlash(folder))
	rs, err := restoresOf(targets)
	if err != nil {
		return nil, nil, err
	}
	res, conflicts, err := sandbox.RestoreFiles(dir, ApplyTag(fsm.CallInfo{Session: session, Path: path}), rs, force)
	if err != nil {
		return nil, nil, err
	}
	out := make([]fsm.RevertConflict, len(conflicts))
	for i, c := range conflicts {
		out[i] = fsm.RevertConflict(c)
	}
	if res == nil {
		return nil, out, nil
	}
	paths := make([]string, len(targets))
	for i, t := range targets {
		paths[i] = t.Path
	}
	w.Unread(session, paths)
	return restored{res, w.UndoCaps()}, out, nil
}

// Unread implements fsm.Workspace: the file tools forget what session read or
// wrote of paths (slash-separated, workspace-relative; nil: all of them, to be
// recalled from the log), so edit_file asks for a read first.
func (w *Workspaces) Unread(session string, paths []string) {
	var local []string
	for _, p := range paths {
		local = append(local, filepath.FromSlash(p))
	}
	if paths != nil && local == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, st := range w.seen {
		st.forget(session, local)
	}
}

// restoresOf are targets as the sandbox restores them.
func restoresOf(targets []fsm.RestoreTarget) ([]sandbox.Restore, error) {
	rs := make([]sandbox.Restore, len(targets))
	for i, t := range targets {
		want, err := entryOf(t.Want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Path, err)
		}
		expect, err := entryOf(t.Expect)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Path, err)
		}
		rs[i] = sandbox.Restore{Path: t.Path, Want: want, Content: t.Content, Expect: expect}
		if t.Expect != nil {
			rs[i].ExpectHash = t.Expect.Hash
		}
	}
	return rs, nil
}

// restored is a restore waiting for its record.
type restored struct {
	res  *sandbox.Result
	caps UndoCaps
}

func (r restored) Changes() ([]events.FileChange, []events.Content, error) {
	return recordChanges(r.res, r.caps)
}

func (r restored) Settle(recorded bool) { r.res.Settle(recorded) }

// entryOf is a recorded state as the sandbox restores it.
func entryOf(s *events.FileState) (*sandbox.EntryState, error) {
	if s == nil {
		return nil, nil
	}
	at, err := time.Parse(time.RFC3339Nano, s.Mtime)
	if err != nil {
		return nil, fmt.Errorf("its recorded time %q: %w", s.Mtime, err)
	}
	return &sandbox.EntryState{Kind: s.Kind, Mode: s.Mode, UID: s.UID, GID: s.GID, MtimeNs: at.UnixNano(), Size: s.Size, Target: s.Target}, nil
}

// ForgetSession implements fsm.Workspace: an erased session's own workspace folder
// (per-session scope) goes, and its commands' home; a per-user or shared workspace
// is not the session's alone and stays.
func (w *Workspaces) ForgetSession(session string) (int, error) {
	if w.scope != ScopeSession || session == "" {
		return 0, nil
	}
	rel := filepath.Join("sessions", pathName(session))
	dir := filepath.Join(w.root.Dir(), rel)
	w.mu.Lock()
	if ws, ok := w.open[rel]; ok {
		ws.Close()
		delete(w.open, rel)
	}
	delete(w.caches, dir)
	w.mu.Unlock()
	n := 0
	copies, _ := filepath.Glob(filepath.Join(w.root.Dir(), "sessions", sandbox.BranchPrefix+pathName(session)+"-"+strings.Repeat("[0-9a-f]", 16)))
	for _, d := range append([]string{dir, w.homeOf(dir)}, copies...) {
		if d == "" {
			continue
		}
		fi, err := os.Lstat(d)
		switch {
		case os.IsNotExist(err):
			continue
		case err != nil:
			return n, err
		case !fi.IsDir():
			return n, fmt.Errorf("%s is not a directory of the session's own", d)
		}
		if err := os.RemoveAll(d); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
