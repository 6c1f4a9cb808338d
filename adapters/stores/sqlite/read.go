package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Events implements events.Log.
func (s *Store) Events(ctx context.Context, session string, after int64) ([]events.Event, error) {
	rows, err := s.query(ctx, qEventsAfter, session, after)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanEvent)
}

// GrantEvents returns a session's GrantGiven and GrantRevoked events with seq up
// to upto (0: all), in seq order, read through their own index.
func (s *Store) GrantEvents(ctx context.Context, session string, upto int64) ([]events.Event, error) {
	rows, err := s.query(ctx, qGrantEvents, session, upto)
	if err != nil {
		return nil, fmt.Errorf("read grants of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanEvent)
}

// Plan returns a session's plan: its latest update_plan that succeeded, or the one it
// brought from the sessions it was branched from (nil: none).
func (s *Store) Plan(ctx context.Context, session string) (*projection.Plan, error) {
	return sqlrows.LatestPlan(ctx, session, s.latestPlan, s.Session)
}

// latestPlan returns a session's latest update_plan result that succeeded, with seq up
// to upto (0: any), read through its own index; none: an empty list.
func (s *Store) latestPlan(ctx context.Context, session string, upto int64) ([]events.Event, error) {
	rows, err := s.query(ctx, qLatestPlan, session, upto)
	if err != nil {
		return nil, fmt.Errorf("read the plan of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanEvent)
}

// Spend reads what budget checks count for q: a seek of the session's spend, one of
// the owner's day, and of the extensions given to either.
func (s *Store) Spend(ctx context.Context, q projection.SpendQuery) (projection.Spend, error) {
	rows, err := s.query(ctx, qSpend, q.Session, q.App, q.Owner, q.Day)
	return sqlrows.ReadSpend(rows, err)
}

// LastSeq returns the seq of the newest event of session (0 if it has none).
func (s *Store) LastSeq(ctx context.Context, session string) (int64, error) {
	var last int64
	err := s.queryRow(ctx, qLastSeq, session).Scan(&last)
	return last, err
}

// Session returns a session's summary. Errors: not_found.
func (s *Store) Session(ctx context.Context, id string) (projection.Session, error) {
	return sqlrows.ReadSession(s.queryRow(ctx, qSession, id), id)
}

// Head returns a session's summary with its log's newest seq and its queue's length,
// read at one moment. Errors: not_found.
func (s *Store) Head(ctx context.Context, id string) (projection.SessionHead, error) {
	return sqlrows.ReadSessionHead(s.queryRow(ctx, qSessionHead, id), id)
}

func (s *Store) querySessions(ctx context.Context, q string, args ...any) ([]projection.Session, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	return sqlrows.All(rows, sqlrows.ScanSession)
}

// SessionPage lists an owner's sessions newest first, optionally of one app, starting
// after the session (createdAt, id) of the previous page ("" for the first).
func (s *Store) SessionPage(ctx context.Context, owner, app string, afterCreated time.Time, afterID string, limit int) ([]projection.Session, error) {
	cursor := ""
	if afterID != "" {
		cursor = sqlrows.FormatTime(afterCreated)
	}
	return s.querySessions(ctx, qSessionsPage, owner, app, cursor, afterID, limit)
}

// Branches lists the sessions branched from session, by branch point.
func (s *Store) Branches(ctx context.Context, session string) ([]projection.Session, error) {
	return s.querySessions(ctx, qBranchesOf, session)
}

// History returns a session's committed conversation, in order; a branch's starts
// with its sources' items up to each branch point.
func (s *Store) History(ctx context.Context, session string) ([]events.Item, error) {
	raw, err := s.HistoryRaw(ctx, session)
	if err != nil {
		return nil, err
	}
	return sqlrows.DecodeItems(session, raw)
}

// HistoryRaw returns the same items as History as their stored canonical JSON, for
// callers that only pass them on.
func (s *Store) HistoryRaw(ctx context.Context, session string) ([]json.RawMessage, error) {
	rows, err := s.query(ctx, qLineageOf, session)
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", session, err)
	}
	type source struct {
		id   string
		upto sql.NullInt64
	}
	sources, err := sqlrows.All(rows, func(r sqlrows.Scanner) (source, error) {
		var src source
		return src, r.Scan(&src.id, &src.upto)
	})
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", session, err)
	}
	var out []json.RawMessage
	for _, src := range sources { // items are never changed once written: no snapshot is needed across the reads
		if src.upto.Valid {
			rows, err = s.query(ctx, qHistoryUpTo, src.id, src.upto.Int64)
		} else {
			rows, err = s.query(ctx, qHistoryOf, src.id)
		}
		if err != nil {
			return nil, fmt.Errorf("read history of %s: %w", session, err)
		}
		items, err := sqlrows.All(rows, sqlrows.ScanRaw)
		if err != nil {
			return nil, fmt.Errorf("read history of %s: %w", session, err)
		}
		out = append(out, items...)
	}
	return out, nil
}

// HistoryAsRun is History as people read it: a call a reviewer edited shows the
// arguments it ran with, the model's proposal as proposed_arguments and the reviewer
// as edited_by. (The model's own context keeps the call as it proposed it; the output
// it received says what changed.)
func (s *Store) HistoryAsRun(ctx context.Context, session string) ([]json.RawMessage, error) {
	rows, err := s.query(ctx, qHistoryAsRun, session)
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", session, err)
	}
	out, err := sqlrows.All(rows, sqlrows.ScanAsRun)
	if err != nil {
		return nil, &events.Error{Code: events.CodeCorruptLog, Field: "history of " + session, Message: "bad item", Err: err}
	}
	return out, nil
}

func (s *Store) queryTurns(ctx context.Context, q string, args ...any) ([]projection.Turn, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read turns: %w", err)
	}
	return sqlrows.All(rows, sqlrows.ScanTurn)
}

// Turns lists a session's turns in start order.
func (s *Store) Turns(ctx context.Context, session string) ([]projection.Turn, error) {
	return s.withProgress(func() ([]projection.Turn, error) { return s.queryTurns(ctx, qTurns, session) })
}

// Turn returns one turn. Errors: not_found.
func (s *Store) Turn(ctx context.Context, session, turn string) (projection.Turn, error) {
	t, err := s.withProgressOne(func() (projection.Turn, error) { return sqlrows.ScanTurn(s.queryRow(ctx, qTurn, session, turn)) })
	if errors.Is(err, sql.ErrNoRows) {
		return t, events.Errorf(events.CodeNotFound, "turn %s of session %s not found", turn, session)
	}
	return t, err
}

// LastTurn returns a session's newest turn. Errors: not_found (no turn yet).
func (s *Store) LastTurn(ctx context.Context, session string) (projection.Turn, error) {
	t, err := s.withProgressOne(func() (projection.Turn, error) { return sqlrows.ScanTurn(s.queryRow(ctx, qLastTurn, session)) })
	if errors.Is(err, sql.ErrNoRows) {
		return t, events.Errorf(events.CodeNotFound, "session %s has no turns", session)
	}
	return t, err
}

// FirstTurn returns a session's first turn (its own; a branch's first after the
// branch point). Errors: not_found.
func (s *Store) FirstTurn(ctx context.Context, session string) (projection.Turn, error) {
	t, err := s.withProgressOne(func() (projection.Turn, error) { return sqlrows.ScanTurn(s.queryRow(ctx, qFirstTurn, session)) })
	if errors.Is(err, sql.ErrNoRows) {
		return t, events.Errorf(events.CodeNotFound, "session %s has no turns", session)
	}
	return t, err
}

// TurnEndingAt returns the turn of session whose last event is seq. Errors: not_found.
func (s *Store) TurnEndingAt(ctx context.Context, session string, seq int64) (projection.Turn, error) {
	t, err := s.withProgressOne(func() (projection.Turn, error) {
		return sqlrows.ScanTurn(s.queryRow(ctx, qTurnEndingAt, session, seq))
	})
	if errors.Is(err, sql.ErrNoRows) {
		return t, events.Errorf(events.CodeNotFound, "no turn of session %s ends at seq %d", session, seq)
	}
	return t, err
}

// RunningTurns lists turns that started and have not ended, across all sessions:
// after a crash these are the turns to recover.
func (s *Store) RunningTurns(ctx context.Context) ([]projection.Turn, error) {
	return s.withProgress(func() ([]projection.Turn, error) { return s.queryTurns(ctx, qRunningTurns) })
}

// SuspendedTurns lists turns waiting for people, across all sessions.
func (s *Store) SuspendedTurns(ctx context.Context) ([]projection.Turn, error) {
	return s.withProgress(func() ([]projection.Turn, error) { return s.queryTurns(ctx, qSuspended) })
}

// CountEvents returns how many events the log holds.
func (s *Store) CountEvents(ctx context.Context) (int64, error) {
	var n int64
	err := s.queryRow(ctx, qCountEvents).Scan(&n)
	return n, err
}

// PendingInterrupts lists the questions a session's suspended turn waits for, in the
// order they were asked.
func (s *Store) PendingInterrupts(ctx context.Context, session string) ([]projection.Interrupt, error) {
	rows, err := s.query(ctx, qPending, session)
	if err != nil {
		return nil, fmt.Errorf("read interrupts of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanInterrupt)
}

// SessionsWaiting lists owner's sessions (of app, when given) whose turn waits for a
// person, newest first.
func (s *Store) SessionsWaiting(ctx context.Context, owner, app string) ([]projection.Session, error) {
	return s.querySessions(ctx, qSessionCols+` WHERE owner = ?1 AND (app = ?2 OR ?2 = '')
		AND id IN (SELECT session_id FROM proj_interrupts INDEXED BY proj_interrupts_pending WHERE status = 'pending')
		ORDER BY created_at DESC, id DESC`, owner, app)
}

// Content returns a file content of the undo log that session, or a session it was
// branched from, refers to. Errors: not_found, corrupt_log.
func (s *Store) Content(ctx context.Context, session, hash string) ([]byte, error) {
	return sqlrows.ReadContent(ctx, s.read, func(q string) string { return q }, session, hash)
}

// ContentBytes is what the undo log's chunks session refers to hold.
func (s *Store) ContentBytes(ctx context.Context, session string) (int64, error) {
	return sqlrows.ContentBytes(ctx, s.read, func(q string) string { return q }, session)
}
