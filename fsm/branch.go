package fsm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// BranchPoint says where a branch starts: after a committed turn, named by its id or
// by the seq of its TurnCommitted. Files says what its workspace files are, in an
// app with a workspace (see BranchFilesRestore, BranchFilesKeep; "": the scope's
// default).
type BranchPoint struct {
	Turn  string
	Seq   int64
	Files string
}

// Branch opens a new session for owner that continues source's conversation from a
// committed turn end. It records (source, seq) and copies nothing, so its cost does
// not depend on the source's length. Errors: invalid (no point given), not_found
// (source or turn), conflict (the point is not a committed turn end).
func (e *Engine) Branch(ctx context.Context, source, owner string, at BranchPoint, metadata json.RawMessage) (projection.Session, error) {
	src, err := e.store.Session(ctx, source)
	if err != nil {
		return projection.Session{}, err
	}
	var t projection.Turn
	switch {
	case at.Turn != "" && at.Seq != 0:
		return projection.Session{}, events.FieldError(events.CodeInvalid, "at_turn", "give at_turn or at_seq, not both")
	case at.Turn != "":
		t, err = e.store.Turn(ctx, source, at.Turn)
	case at.Seq > 0:
		t, err = e.store.TurnEndingAt(ctx, source, at.Seq)
		if events.IsCode(err, events.CodeNotFound) {
			return projection.Session{}, events.FieldError(events.CodeInvalid, "at_seq",
				"seq %d of session %s is not a committed turn end; branch points are listed at /branch-points", at.Seq, source)
		}
	default:
		return projection.Session{}, events.FieldError(events.CodeInvalid, "at_turn", "give at_turn or a positive at_seq")
	}
	if err != nil {
		return projection.Session{}, err
	}
	if t.Status != projection.TurnCompleted {
		code := events.CodeInvalid // a turn that ended otherwise never becomes a branch point
		if t.Status == projection.TurnRunning || t.Status == projection.TurnSuspended {
			code = events.CodeConflict // it may yet commit
		}
		return projection.Session{}, &events.Error{Code: code, Field: "at_turn",
			Message: fmt.Sprintf("turn %s of session %s is %s: only a committed turn end can be branched from", t.ID, source, t.Status)}
	}
	if len(metadata) > 0 {
		if metadata, err = canonicalMetadata(metadata); err != nil {
			return projection.Session{}, err
		}
	}
	sb := &events.SessionBranched{App: src.App, Owner: owner, Agent: t.EndAgent, Metadata: metadata,
		SourceSession: source, SourceSeq: t.EndSeq, SourceTurn: t.ID, Files: at.Files}
	if sb.Revert, err = e.branchRevert(ctx, src, owner, t, at.Files); err != nil {
		return projection.Session{}, err
	}
	id := e.opts.NewID()
	fail := func(err error) (projection.Session, error) {
		if sb.Revert != "" { // the source's files go back as they were: no branch, no revert
			if _, uerr := e.revert(ctx, RevertRequest{Session: source, Revert: sb.Revert, By: owner}); uerr != nil {
				err = errors.Join(err, fmt.Errorf("the revert %s of the source's files made for it stands: %w", sb.Revert, uerr))
			}
		}
		return projection.Session{}, err
	}
	ev, err := events.New("", "", sb)
	if err != nil {
		return fail(err)
	}
	if _, err := e.appendEvents(ctx, id, 0, []events.Event{ev}, false); err != nil {
		return fail(fmt.Errorf("branch %s: %w", source, err))
	}
	return e.store.Session(ctx, id)
}

// RecordingSource is what a recording is read from: a store's sessions and logs.
type RecordingSource interface {
	Session(ctx context.Context, id string) (projection.Session, error)
	Events(ctx context.Context, session string, after int64) ([]events.Event, error)
}

// Recording is a session's log as a recording Replay takes whole: for a branch, the
// logs of the sessions it was branched from come first, oldest first, each up to
// where the next one branched from it; then the session's own. A session that is no
// branch is its log alone. Errors: not_found (the session or a source).
func Recording(ctx context.Context, src RecordingSource, session string) ([]events.Event, error) {
	var parts [][]events.Event
	n := 0
	id, upto := session, int64(0)
	for {
		s, err := src.Session(ctx, id)
		if err != nil {
			return nil, err
		}
		evs, err := src.Events(ctx, id, 0)
		if err != nil {
			return nil, err
		}
		if upto > 0 {
			cut := 0
			for cut < len(evs) && evs[cut].Seq <= upto {
				cut++
			}
			evs = evs[:cut]
		}
		parts = append(parts, evs)
		n += len(evs)
		if s.ParentID == "" {
			break
		}
		id, upto = s.ParentID, s.ParentSeq
	}
	out := make([]events.Event, 0, n)
	for i := len(parts) - 1; i >= 0; i-- {
		out = append(out, parts[i]...)
	}
	return out, nil
}

// Recording is a session's recording (the package's Recording) from this engine's
// store.
func (e *Engine) Recording(ctx context.Context, session string) ([]events.Event, error) {
	return Recording(ctx, e.store, session)
}
