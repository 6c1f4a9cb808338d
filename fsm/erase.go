package fsm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// ErasureStore is what erasure needs of a store: the sessions to erase and the one
// guarded path that removes them (see projection.ErasureRequest).
type ErasureStore interface {
	Branches(ctx context.Context, session string) ([]projection.Session, error)
	OwnerSessions(ctx context.Context, owner string) ([]string, error)
	// IdleSessions lists, by id, up to limit sessions of app after the id after ("" for
	// the first) whose last event is older than before.
	IdleSessions(ctx context.Context, app string, before time.Time, after string, limit int) ([]string, error)
	Erase(ctx context.Context, req projection.ErasureRequest) (projection.ErasureReceipt, error)
}

// RetentionBy is who a retention erasure's receipt says asked for it.
const RetentionBy = "turnlog"

// EraseSession erases a session: its events, projections, blobs nobody else
// references, memories written in it, idempotency records, webhook deliveries and
// what the engine holds of it. A suspended turn is canceled by it; a running one
// refuses it (conflict). A session with branches is refused (conflict) unless
// cascade, which erases the branches, and theirs, too. Errors: not_found, conflict,
// shutting_down, internal.
func (e *Engine) EraseSession(ctx context.Context, session, by string, cascade bool) (projection.ErasureReceipt, error) {
	es := e.store
	if _, err := e.store.Session(ctx, session); err != nil {
		return projection.ErasureReceipt{}, err
	}
	tree, err := sessionTree(ctx, es, []string{session})
	if err != nil {
		return projection.ErasureReceipt{}, err
	}
	if len(tree) > 1 && !cascade {
		return projection.ErasureReceipt{}, events.Errorf(events.CodeConflict,
			"session %s has %d branches: erase them first, or erase with cascade=true", session, len(tree)-1)
	}
	return e.erase(ctx, es, projection.ErasureRequest{Kind: projection.ErasureSession, Subject: session, By: by, Sessions: tree})
}

// EraseUser erases everything of one user: every session they own with its
// branches, and their memories, idempotency records and sign-ins. Errors: invalid
// (no user), conflict (one of the sessions has a turn running: nothing is erased),
// shutting_down, internal.
func (e *Engine) EraseUser(ctx context.Context, user, by string) (projection.ErasureReceipt, error) {
	if user == "" {
		return projection.ErasureReceipt{}, events.FieldError(events.CodeInvalid, "user", "is empty")
	}
	es := e.store
	owned, err := es.OwnerSessions(ctx, user)
	if err != nil {
		return projection.ErasureReceipt{}, err
	}
	tree, err := sessionTree(ctx, es, owned)
	if err != nil {
		return projection.ErasureReceipt{}, err
	}
	return e.erase(ctx, es, projection.ErasureRequest{Kind: projection.ErasureUser, Subject: user, By: by, Sessions: tree, Owner: user})
}

// idleBatch is how many idle sessions a sweep reads at once.
const idleBatch = 500

// EraseIdle erases, for every app with a Retention, the sessions idle longer than
// it as of the engine's clock — a session with branches only once all of them are idle too. A
// session that cannot be erased now (a turn runs) is left for the next sweep. It
// returns the receipts, and every error met on the way.
func (e *Engine) EraseIdle(ctx context.Context) ([]projection.ErasureReceipt, error) {
	now := e.opts.Clock()
	es := e.store
	names := make([]string, 0, len(e.apps))
	for name, a := range e.apps {
		if a.Retention > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []projection.ErasureReceipt
	var errs []error
	for _, name := range names {
		idle, err := allIdle(ctx, es, name, now.Add(-e.apps[name].Retention))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		isIdle := make(map[string]bool, len(idle))
		for _, id := range idle {
			isIdle[id] = true
		}
		erased := map[string]bool{}
		for _, id := range idle {
			if erased[id] {
				continue
			}
			tree, err := sessionTree(ctx, es, []string{id})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if !allOf(tree, isIdle) {
				continue // a branch is still in use: its source stays until it is idle too
			}
			rec, err := e.erase(ctx, es, projection.ErasureRequest{Kind: projection.ErasureRetention, Subject: id, By: RetentionBy, Sessions: tree})
			var te *events.Error
			switch {
			case errors.As(err, &te) && (te.Code == events.CodeConflict || te.Code == events.CodeNotFound):
				continue // a turn runs, or it is gone already: the next sweep sees
			case err != nil:
				errs = append(errs, err)
				continue
			}
			for _, s := range tree {
				erased[s] = true
			}
			out = append(out, rec)
		}
	}
	return out, errors.Join(errs...)
}

// allIdle pages through every session of app idle since before, so that sessions a
// sweep must leave (a branch still in use, a turn running) never hide the others.
func allIdle(ctx context.Context, es ErasureStore, app string, before time.Time) ([]string, error) {
	var out []string
	for after := ""; ; {
		page, err := es.IdleSessions(ctx, app, before, after, idleBatch)
		if err != nil {
			return out, err
		}
		out = append(out, page...)
		if len(page) < idleBatch {
			return out, nil
		}
		after = page[len(page)-1]
	}
}

// erase holds every session of req while the store erases them, so no turn starts,
// resumes or is kicked from a queue meanwhile, and drops what the engine keeps.
func (e *Engine) erase(ctx context.Context, es ErasureStore, req projection.ErasureRequest) (projection.ErasureReceipt, error) {
	var unlocks []func()
	defer func() {
		for _, u := range unlocks {
			u()
		}
	}()
	for _, s := range req.Sessions {
		_, unlock, err := e.lock(s)
		if err != nil {
			return projection.ErasureReceipt{}, err
		}
		unlocks = append(unlocks, unlock)
	}
	// Which app's workspaces hold each session's files, read before they are gone.
	workspaces := map[string]Workspace{}
	for _, s := range req.Sessions {
		if sess, err := e.store.Session(ctx, s); err == nil {
			if app := e.apps[sess.App]; app != nil && app.Workspace != nil {
				workspaces[s] = app.Workspace
			}
		}
	}
	req.ID, req.At = e.opts.NewID(), e.opts.Clock().UTC()
	rec, err := es.Erase(ctx, req)
	if err != nil {
		return rec, err
	}
	var errs []error
	for _, s := range rec.Sessions {
		e.forget(s)
		if ws := workspaces[s]; ws != nil {
			n, err := ws.ForgetSession(s)
			rec.Counts.WorkspaceFolders += n
			if err != nil {
				errs = append(errs, fmt.Errorf("the files of session %s: %w", s, err))
			}
		}
	}
	if len(errs) > 0 {
		return rec, fmt.Errorf("the sessions were erased from the log, but not all their files: %w", errors.Join(errs...))
	}
	return rec, nil
}

// sessionTree returns roots and every session branched from them, at any depth,
// each once, roots first.
func sessionTree(ctx context.Context, es ErasureStore, roots []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	queue := append([]string{}, roots...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
		bs, err := es.Branches(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			queue = append(queue, b.ID)
		}
	}
	return out, nil
}

func allOf(ids []string, in map[string]bool) bool {
	for _, id := range ids {
		if !in[id] {
			return false
		}
	}
	return true
}
