package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/adapters/sqlrows"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Events implements events.Log.
func (s *Store) Events(ctx context.Context, session string, after int64) ([]events.Event, error) {
	rows, err := s.query(ctx, qEventsAfter, session, after)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", session, err)
	}
	defer rows.Close()
	var out []events.Event
	for rows.Next() {
		ev, err := sqlrows.ScanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// LastSeq returns the seq of the newest event of session (0 if it has none).
func (s *Store) LastSeq(ctx context.Context, session string) (int64, error) {
	var last int64
	err := s.queryRow(ctx, qLastSeq, session).Scan(&last)
	return last, err
}

// Session returns a session's summary. Errors: not_found.
func (s *Store) Session(ctx context.Context, id string) (projection.Session, error) {
	ss, err := sqlrows.ScanSession(s.queryRow(ctx, qSession, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ss, events.Errorf(events.CodeNotFound, "session %s not found", id)
	}
	if err != nil {
		return ss, fmt.Errorf("read session %s: %w", id, err)
	}
	return ss, nil
}

func (s *Store) querySessions(ctx context.Context, q string, args ...any) ([]projection.Session, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	defer rows.Close()
	var out []projection.Session
	for rows.Next() {
		ss, err := sqlrows.ScanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ss)
	}
	return out, rows.Err()
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
	out := make([]events.Item, len(raw))
	for i, r := range raw {
		if out[i], err = sqlrows.DecodeItem(r); err != nil {
			return nil, &events.Error{Code: events.CodeCorruptLog, Field: "history of " + session, Message: "bad item", Err: err}
		}
	}
	return out, nil
}

// HistoryRaw returns the same items as History as their stored canonical JSON, for
// callers that only pass them on.
func (s *Store) HistoryRaw(ctx context.Context, session string) ([]json.RawMessage, error) {
	rows, err := s.query(ctx, qHistory, session)
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", session, err)
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	return out, rows.Err()
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
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var raw []byte
		var edited sql.NullString
		var by string
		if err := rows.Scan(&raw, &edited, &by); err != nil {
			return nil, err
		}
		if edited.Valid {
			if raw, err = sqlrows.AsEdited(raw, edited.String, by); err != nil {
				return nil, &events.Error{Code: events.CodeCorruptLog, Field: "history of " + session, Message: "bad item", Err: err}
			}
		}
		out = append(out, raw)
	}
	return out, rows.Err()
}

func (s *Store) queryTurns(ctx context.Context, q string, args ...any) ([]projection.Turn, error) {
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read turns: %w", err)
	}
	defer rows.Close()
	var out []projection.Turn
	for rows.Next() {
		t, err := sqlrows.ScanTurn(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Turns lists a session's turns in start order.
func (s *Store) Turns(ctx context.Context, session string) ([]projection.Turn, error) {
	return s.queryTurns(ctx, qTurns, session)
}

// Turn returns one turn. Errors: not_found.
func (s *Store) Turn(ctx context.Context, session, turn string) (projection.Turn, error) {
	t, err := sqlrows.ScanTurn(s.queryRow(ctx, qTurn, session, turn))
	if errors.Is(err, sql.ErrNoRows) {
		return t, events.Errorf(events.CodeNotFound, "turn %s of session %s not found", turn, session)
	}
	return t, err
}

// LastTurn returns a session's newest turn. Errors: not_found (no turn yet).
func (s *Store) LastTurn(ctx context.Context, session string) (projection.Turn, error) {
	t, err := sqlrows.ScanTurn(s.queryRow(ctx, qLastTurn, session))
	if errors.Is(err, sql.ErrNoRows) {
		return t, events.Errorf(events.CodeNotFound, "session %s has no turns", session)
	}
	return t, err
}

// TurnEndingAt returns the turn of session whose last event is seq. Errors: not_found.
func (s *Store) TurnEndingAt(ctx context.Context, session string, seq int64) (projection.Turn, error) {
	t, err := sqlrows.ScanTurn(s.queryRow(ctx, qTurnEndingAt, session, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return t, events.Errorf(events.CodeNotFound, "no turn of session %s ends at seq %d", session, seq)
	}
	return t, err
}

// RunningTurns lists turns that started and have not ended, across all sessions:
// after a crash these are the turns to recover.
func (s *Store) RunningTurns(ctx context.Context) ([]projection.Turn, error) {
	return s.queryTurns(ctx, qRunningTurns)
}

// SuspendedTurns lists turns waiting for people, across all sessions.
func (s *Store) SuspendedTurns(ctx context.Context) ([]projection.Turn, error) {
	return s.queryTurns(ctx, qSuspended)
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
	defer rows.Close()
	var out []projection.Interrupt
	for rows.Next() {
		var (
			i       projection.Interrupt
			args    sql.NullString
			status  string
			askedAt string
			policy  string
		)
		if err := rows.Scan(&i.Session, &i.Turn, &i.ID, &i.Kind, &i.Path, &i.CallID, &i.Tool, &args, &i.Reason, &status, &askedAt, &policy); err != nil {
			return nil, err
		}
		var p sqlrows.InterruptPolicy
		if err := json.Unmarshal([]byte(policy), &p); err != nil {
			return nil, fmt.Errorf("read interrupts of %s: %w", session, err)
		}
		i.Rule, i.Level, i.Resources, i.Alternative = p.Rule, p.Level, p.Resources, p.Alternative
		if args.Valid {
			i.Arguments = json.RawMessage(args.String)
		}
		i.Status = projection.InterruptStatus(status)
		i.RequestedAt, _ = time.Parse(time.RFC3339Nano, askedAt)
		out = append(out, i)
	}
	return out, rows.Err()
}

// SessionsWaiting lists owner's sessions (of app, when given) whose turn waits for a
// person, newest first.
func (s *Store) SessionsWaiting(ctx context.Context, owner, app string) ([]projection.Session, error) {
	return s.querySessions(ctx, qSessionCols+` WHERE owner = ?1 AND (app = ?2 OR ?2 = '')
		AND id IN (SELECT session_id FROM proj_interrupts INDEXED BY proj_interrupts_pending WHERE status = 'pending')
		ORDER BY created_at DESC, id DESC`, owner, app)
}
