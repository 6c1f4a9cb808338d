package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

const (
	qGrantEvents = `SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data::text, e.blob_hash, b.data, e.at FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = $1 AND e.type IN ('GrantGiven', 'GrantRevoked') AND ($2 = 0 OR e.seq <= $2) ORDER BY e.seq`
	qEventsAfter = `SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data::text, e.blob_hash, b.data, e.at FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = $1 AND e.seq > $2 ORDER BY e.seq`
	// qLineage names a session ($1) and the sources it was branched from, each with
	// the seq up to which it contributes.
	qLineage = `WITH RECURSIVE lineage (ancestor, upto, depth) AS (
    SELECT $1::text, NULL::bigint, 0
    UNION ALL
    SELECT s.parent_id, s.parent_seq, l.depth + 1 FROM lineage l JOIN proj_sessions s ON s.id = l.ancestor WHERE s.parent_id IS NOT NULL
)`
	qHistory = qLineage + ` SELECT h.item::text FROM lineage l JOIN proj_history h ON h.session_id = l.ancestor AND (l.upto IS NULL OR h.seq <= l.upto)
ORDER BY l.depth DESC, h.seq, h.idx`
	qHistoryAsRun = qLineage + ` SELECT h.item::text, i.edited_arguments::text, coalesce(i.answered_by, '') FROM lineage l JOIN proj_history h ON h.session_id = l.ancestor AND (l.upto IS NULL OR h.seq <= l.upto)
LEFT JOIN proj_interrupts i ON h.item ->> 'type' = 'function_call' AND i.session_id = h.session_id AND i.turn_id = h.turn_id
     AND i.path = (h.item ->> 'agent') || '/tool/' || (h.item ->> 'call_id') || '/approval' AND i.edited_arguments IS NOT NULL
ORDER BY l.depth DESC, h.seq, h.idx`
	qSessionCols = `SELECT id, app, owner, metadata::text, created_at, active_agent, turn_count, last_commit_seq, parent_id, parent_seq, parent_turn FROM proj_sessions`
	qSessionHead = `SELECT s.id, s.app, s.owner, s.metadata::text, s.created_at, s.active_agent, s.turn_count, s.last_commit_seq, s.parent_id, s.parent_seq, s.parent_turn`
	qTurnCols    = `SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at, ended_at, model_calls, tool_calls, input_tokens, output_tokens, cached_tokens, reasoning_tokens, model_ms, error_code, error_message, end_agent, agents::text FROM proj_turns`
	qPending     = `SELECT session_id, turn_id, interrupt_id, kind, path, coalesce(call_id, ''), coalesce(tool, ''), arguments::text, coalesce(reason, ''), status, requested_at, coalesce(policy::text, '{}') FROM proj_interrupts WHERE session_id = $1 AND status = 'pending' ORDER BY requested_seq`
	qQueued      = `SELECT session_id, turn_id, input, by_user, status, queued_at, queued_seq FROM proj_queue WHERE session_id = $1 AND status = 'queued' ORDER BY queued_seq`
	qLatestPlan  = `SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data::text, e.blob_hash, b.data, e.at FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = $1 AND e.type = 'ToolResulted' AND e.data ->> 'tool' = 'update_plan' AND NOT coalesce((e.data ->> 'is_error')::boolean, false) AND ($2 = 0 OR e.seq <= $2) ORDER BY e.seq DESC LIMIT 1`
	qAudit       = `SELECT seq, turn_id, at, path, kind, coalesce(tool, ''), coalesce(outcome, ''), coalesce(rule, ''), coalesce(reason, ''), resources, exit_code, coalesce(diff, ''), coalesce(answered_by, ''), proposed, approved FROM audit WHERE session_id = $1
	UNION ALL SELECT seq, turn_id, at, path, kind, coalesce(tool, ''), outcome, '', coalesce(reason, ''), resources, NULL, '', coalesce(answered_by, ''), NULL, NULL
	FROM audit_files WHERE session_id = $1
	UNION ALL SELECT seq, turn_id, at, path, kind, coalesce(tool, ''), outcome, coalesce(rule, ''), coalesce(reason, ''), NULL, NULL, '', coalesce(answered_by, ''), NULL, NULL
	FROM audit_grants WHERE session_id = $1
	UNION ALL SELECT seq, turn_id, at, path, kind, '', outcome, '', coalesce(reason, ''), NULL, NULL, '', '', NULL, NULL
	FROM audit_recoveries WHERE session_id = $1 ORDER BY seq, kind`
)

// qSessionHeadOf reads a SessionHead (sqlrows).
var qSessionHeadOf = qSessionHead + sqlrows.Dollar(sqlrows.QSessionHeadTail)

// qSessionsPage is the page of sessions both stores read (sqlrows).
var qSessionsPage = qSessionCols + sqlrows.Dollar(sqlrows.QSessionsPageWhere)

// Events implements events.Log.
func (s *Store) Events(ctx context.Context, session string, after int64) ([]events.Event, error) {
	rows, err := s.db.QueryContext(ctx, qEventsAfter, session, after)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanEvent)
}

// GrantEvents returns a session's GrantGiven and GrantRevoked events with seq up
// to upto (0: all), in seq order, read through their own index.
func (s *Store) GrantEvents(ctx context.Context, session string, upto int64) ([]events.Event, error) {
	rows, err := s.db.QueryContext(ctx, qGrantEvents, session, upto)
	if err != nil {
		return nil, fmt.Errorf("read grants of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanEvent)
}

// Spend reads what budget checks count for q in one round trip: the session's
// spend, the owner's day, and the extensions given to either.
func (s *Store) Spend(ctx context.Context, q projection.SpendQuery) (projection.Spend, error) {
	rows, err := s.db.QueryContext(ctx, qSpend, q.Session, q.App, q.Owner, q.Day)
	return sqlrows.ReadSpend(rows, err)
}

// Plan returns a session's plan: its latest update_plan that succeeded, or the one it
// brought from the sessions it was branched from (nil: none).
func (s *Store) Plan(ctx context.Context, session string) (*projection.Plan, error) {
	return sqlrows.LatestPlan(ctx, session, s.latestPlan, s.Session)
}

// latestPlan returns a session's latest update_plan result that succeeded, with seq up
// to upto (0: any), read through its own index; none: an empty list.
func (s *Store) latestPlan(ctx context.Context, session string, upto int64) ([]events.Event, error) {
	rows, err := s.db.QueryContext(ctx, qLatestPlan, session, upto)
	if err != nil {
		return nil, fmt.Errorf("read the plan of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanEvent)
}

// LastSeq returns the newest seq of session (0 if it has none).
func (s *Store) LastSeq(ctx context.Context, session string) (int64, error) {
	var last int64
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE session_id = $1`, session).Scan(&last)
	return last, err
}

// Session returns a session's summary. Errors: not_found.
func (s *Store) Session(ctx context.Context, id string) (projection.Session, error) {
	return sqlrows.ReadSession(s.db.QueryRowContext(ctx, qSessionCols+` WHERE id = $1`, id), id)
}

// Head returns a session's summary with its log's newest seq and its queue's length,
// in one statement. Errors: not_found.
func (s *Store) Head(ctx context.Context, id string) (projection.SessionHead, error) {
	return sqlrows.ReadSessionHead(s.db.QueryRowContext(ctx, qSessionHeadOf, id), id)
}

func (s *Store) querySessions(ctx context.Context, q string, args ...any) ([]projection.Session, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	return sqlrows.All(rows, sqlrows.ScanSession)
}

// SessionPage lists an owner's sessions newest first, optionally of one app, after
// the session (createdAt, id) of the previous page ("" for the first).
func (s *Store) SessionPage(ctx context.Context, owner, app string, afterCreated time.Time, afterID string, limit int) ([]projection.Session, error) {
	cursor := ""
	if afterID != "" {
		cursor = sqlrows.FormatTime(afterCreated)
	}
	return s.querySessions(ctx, qSessionsPage, owner, app, cursor, afterID, limit)
}

// SessionsWaiting lists owner's sessions (of app, when given) whose turn waits for a
// person, newest first.
func (s *Store) SessionsWaiting(ctx context.Context, owner, app string) ([]projection.Session, error) {
	return s.querySessions(ctx, qSessionCols+` WHERE owner = $1 AND (app = $2 OR $2 = '')
		AND id IN (SELECT session_id FROM proj_interrupts WHERE status = 'pending')
		ORDER BY created_at DESC, id DESC`, owner, app)
}

// Branches lists the sessions branched from session, by branch point.
func (s *Store) Branches(ctx context.Context, session string) ([]projection.Session, error) {
	return s.querySessions(ctx, qSessionCols+sqlrows.Dollar(sqlrows.QBranchesWhere), session)
}

// History returns a session's committed conversation; a branch's starts with its
// sources' items up to each branch point.
func (s *Store) History(ctx context.Context, session string) ([]events.Item, error) {
	raw, err := s.HistoryRaw(ctx, session)
	if err != nil {
		return nil, err
	}
	return sqlrows.DecodeItems(session, raw)
}

// HistoryRaw returns History's items as their stored canonical JSON.
func (s *Store) HistoryRaw(ctx context.Context, session string) ([]json.RawMessage, error) {
	rows, err := s.db.QueryContext(ctx, qHistory, session)
	if err != nil {
		return nil, fmt.Errorf("read history of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanRaw)
}

// HistoryAsRun is History as people read it: a call a reviewer edited shows the
// arguments it ran with, the proposal, and who edited it.
func (s *Store) HistoryAsRun(ctx context.Context, session string) ([]json.RawMessage, error) {
	rows, err := s.db.QueryContext(ctx, qHistoryAsRun, session)
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
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read turns: %w", err)
	}
	return sqlrows.All(rows, sqlrows.ScanTurn)
}

func (s *Store) oneTurn(ctx context.Context, notFound string, q string, args ...any) (projection.Turn, error) {
	t, err := sqlrows.ScanTurn(s.db.QueryRowContext(ctx, q, args...))
	if isNoRows(err) {
		return t, events.Errorf(events.CodeNotFound, "%s", notFound)
	}
	return t, err
}

// Turns lists a session's turns in start order.
func (s *Store) Turns(ctx context.Context, session string) ([]projection.Turn, error) {
	return s.queryTurns(ctx, qTurnCols+` WHERE session_id = $1 ORDER BY start_seq`, session)
}

// Turn returns one turn. Errors: not_found.
func (s *Store) Turn(ctx context.Context, session, turn string) (projection.Turn, error) {
	return s.oneTurn(ctx, fmt.Sprintf("turn %s of session %s not found", turn, session), qTurnCols+` WHERE session_id = $1 AND turn_id = $2`, session, turn)
}

// LastTurn returns a session's newest turn. Errors: not_found.
func (s *Store) LastTurn(ctx context.Context, session string) (projection.Turn, error) {
	return s.oneTurn(ctx, fmt.Sprintf("session %s has no turns", session), qTurnCols+` WHERE session_id = $1 ORDER BY start_seq DESC LIMIT 1`, session)
}

// FirstTurn returns a session's first turn (its own; a branch's first after the
// branch point). Errors: not_found.
func (s *Store) FirstTurn(ctx context.Context, session string) (projection.Turn, error) {
	return s.oneTurn(ctx, fmt.Sprintf("session %s has no turns", session), qTurnCols+` WHERE session_id = $1 ORDER BY start_seq LIMIT 1`, session)
}

// TurnEndingAt returns the turn of session whose last event is seq. Errors: not_found.
func (s *Store) TurnEndingAt(ctx context.Context, session string, seq int64) (projection.Turn, error) {
	return s.oneTurn(ctx, fmt.Sprintf("no turn of session %s ends at seq %d", session, seq), qTurnCols+` WHERE session_id = $1 AND end_seq = $2`, session, seq)
}

// RunningTurns lists turns that started and have not ended, across all sessions.
func (s *Store) RunningTurns(ctx context.Context) ([]projection.Turn, error) {
	return s.queryTurns(ctx, qTurnCols+` WHERE status = 'running' ORDER BY session_id, start_seq`)
}

// SuspendedTurns lists turns waiting for people, across all sessions.
func (s *Store) SuspendedTurns(ctx context.Context) ([]projection.Turn, error) {
	return s.queryTurns(ctx, qTurnCols+` WHERE status = 'suspended' ORDER BY session_id, start_seq`)
}

// PendingInterrupts lists the questions a session's suspended turn waits for.
func (s *Store) PendingInterrupts(ctx context.Context, session string) ([]projection.Interrupt, error) {
	rows, err := s.db.QueryContext(ctx, qPending, session)
	if err != nil {
		return nil, fmt.Errorf("read interrupts of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanInterrupt)
}

// Queued lists a session's waiting inputs in arrival order.
func (s *Store) Queued(ctx context.Context, session string) ([]projection.QueuedInput, error) {
	rows, err := s.db.QueryContext(ctx, qQueued, session)
	if err != nil {
		return nil, fmt.Errorf("read the queue of %s: %w", session, err)
	}
	return sqlrows.All(rows, sqlrows.ScanQueued)
}

// QueuedSessions lists the sessions with inputs waiting.
func (s *Store) QueuedSessions(ctx context.Context) ([]string, error) {
	return s.sessionIDs(ctx, `SELECT DISTINCT session_id FROM proj_queue WHERE status = 'queued' ORDER BY session_id`)
}

func (s *Store) sessionIDs(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	return sqlrows.All(rows, sqlrows.ScanString)
}

// Audit lists what a session's tools did and what was decided about them, the
// files each call changed and each revert.
func (s *Store) Audit(ctx context.Context, session string) ([]projection.AuditEntry, error) {
	rows, err := s.db.QueryContext(ctx, qAudit, session)
	if err != nil {
		return nil, fmt.Errorf("read audit of %s: %w", session, err)
	}
	out, err := sqlrows.All(rows, sqlrows.ScanAudit)
	if out == nil && err == nil {
		out = []projection.AuditEntry{}
	}
	return out, err
}

// Content returns a file content of the undo log that session, or a session it was
// branched from, refers to. Errors: not_found, corrupt_log.
func (s *Store) Content(ctx context.Context, session, hash string) ([]byte, error) {
	return sqlrows.ReadContent(ctx, s.db, sqlrows.Dollar, session, hash)
}

// ContentBytes is what the undo log's chunks session refers to hold.
func (s *Store) ContentBytes(ctx context.Context, session string) (int64, error) {
	return sqlrows.ContentBytes(ctx, s.db, sqlrows.Dollar, session)
}
