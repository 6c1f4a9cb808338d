package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/projection"
)

const qAudit = `SELECT seq, turn_id, at, path, kind, coalesce(tool, ''), coalesce(outcome, ''), coalesce(rule, ''), coalesce(reason, ''),
	resources, exit_code, coalesce(diff, ''), coalesce(answered_by, ''), proposed, approved FROM audit WHERE session_id = ? ORDER BY seq, kind`

// Audit lists what a session's tools did and what was decided about them.
func (s *Store) Audit(ctx context.Context, session string) ([]projection.AuditEntry, error) {
	rows, err := s.query(ctx, qAudit, session)
	if err != nil {
		return nil, fmt.Errorf("read audit of %s: %w", session, err)
	}
	defer rows.Close()
	out := []projection.AuditEntry{}
	for rows.Next() {
		var e projection.AuditEntry
		var at string
		var exit any // a command's exit code; any other tool's "exit_code" need not be an integer
		var proposed, approved, resources sql.NullString
		if err := rows.Scan(&e.Seq, &e.Turn, &at, &e.Path, &e.Kind, &e.Tool, &e.Outcome, &e.Rule, &e.Reason, &resources, &exit, &e.Diff,
			&e.By, &proposed, &approved); err != nil {
			return nil, err
		}
		if resources.Valid && resources.String != "" {
			e.Resources = json.RawMessage(resources.String)
		}
		if proposed.Valid {
			e.Proposed = json.RawMessage(proposed.String)
		}
		if approved.Valid {
			e.Approved = json.RawMessage(approved.String)
		}
		e.At, _ = time.Parse(time.RFC3339Nano, at)
		if n, ok := exit.(int64); ok {
			e.ExitCode = &n
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
