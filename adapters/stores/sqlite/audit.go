package sqlite

import (
	"context"
	"fmt"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/projection"
)

const qAudit = `SELECT seq, turn_id, at, path, kind, coalesce(tool, ''), coalesce(outcome, ''), coalesce(rule, ''), coalesce(reason, ''),
	resources, exit_code, coalesce(diff, ''), coalesce(answered_by, ''), proposed, approved FROM audit WHERE session_id = ?1
	UNION ALL SELECT seq, turn_id, at, path, kind, coalesce(tool, ''), outcome, '', coalesce(reason, ''),
	resources, NULL, '', coalesce(answered_by, ''), NULL, NULL FROM audit_files WHERE session_id = ?1
	UNION ALL SELECT seq, turn_id, at, path, kind, coalesce(tool, ''), outcome, coalesce(rule, ''), coalesce(reason, ''),
	NULL, NULL, '', coalesce(answered_by, ''), NULL, NULL FROM audit_grants WHERE session_id = ?1
	UNION ALL SELECT seq, turn_id, at, path, kind, '', outcome, '', coalesce(reason, ''),
	NULL, NULL, '', '', NULL, NULL FROM audit_recoveries WHERE session_id = ?1 ORDER BY seq, kind`

// Audit lists what a session's tools did and what was decided about them, the
// files each call changed and each revert, the grants people gave and revoked, and
// each recovery of a turn after a crash.
func (s *Store) Audit(ctx context.Context, session string) ([]projection.AuditEntry, error) {
	rows, err := s.query(ctx, qAudit, session)
	if err != nil {
		return nil, fmt.Errorf("read audit of %s: %w", session, err)
	}
	out, err := sqlrows.All(rows, sqlrows.ScanAudit)
	if out == nil && err == nil {
		out = []projection.AuditEntry{}
	}
	return out, err
}
