package fsm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// BranchPoint says where a branch starts: after a committed turn, named by its id or
// by the seq of its TurnCommitted.
type BranchPoint struct {
	Turn string
	Seq  int64
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
			return projection.Session{}, events.FieldError(events.CodeConflict, "at_seq",
				"seq %d of session %s is not a committed turn end; branch points are listed at /branch-points", at.Seq, source)
		}
	default:
		return projection.Session{}, events.FieldError(events.CodeInvalid, "at_turn", "give at_turn or a positive at_seq")
	}
	if err != nil {
		return projection.Session{}, err
	}
	if t.Status != projection.TurnCommitted {
		return projection.Session{}, events.Errorf(events.CodeConflict,
			"turn %s of session %s is %s: only a committed turn end can be branched from", t.ID, source, t.Status)
	}
	if len(metadata) > 0 {
		if metadata, err = canonicalMetadata(metadata); err != nil {
			return projection.Session{}, err
		}
	}
	id := e.opts.NewID()
	ev, err := events.New("", "", &events.SessionBranched{App: src.App, Owner: owner, Agent: t.EndAgent, Metadata: metadata,
		SourceSession: source, SourceSeq: t.EndSeq, SourceTurn: t.ID})
	if err != nil {
		return projection.Session{}, err
	}
	if _, err := e.store.Append(ctx, id, 0, []events.Event{ev}); err != nil {
		return projection.Session{}, fmt.Errorf("branch %s: %w", source, err)
	}
	return e.store.Session(ctx, id)
}
