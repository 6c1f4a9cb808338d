package sqlrows

import "testing"

// TestDollarRewritesParametersOnly: SQLite's numbered and bare parameters become
// PostgreSQL's, a bare one numbered as SQLite numbers it (one more than the largest
// before it); a ? in quoted text stays.
func TestDollarRewritesParametersOnly(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1 WHERE a = ?1 AND (b = ?2 OR ?2 = '')`: `SELECT 1 WHERE a = $1 AND (b = $2 OR $2 = '')`,
		`INSERT INTO t VALUES (?, ?, ?)`:                `INSERT INTO t VALUES ($1, $2, $3)`,
		`UPDATE t SET a = ?3 WHERE b = ? AND c = '?1'`:  `UPDATE t SET a = $3 WHERE b = $4 AND c = '?1'`,
		`SELECT ?2, ?1, ?`:                              `SELECT $2, $1, $3`,
		`SELECT 'it''s ?' WHERE x = ?10`:                `SELECT 'it''s ?' WHERE x = $10`,
	} {
		if got := Dollar(in); got != want {
			t.Errorf("Dollar(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Dollar(QKeyTarget); got != `UPDATE idempotency_keys SET session_id = $1, turn_id = $2, start_seq = $3 WHERE owner = $4 AND key = $5 AND created_at = $6 AND session_id = ''` {
		t.Errorf("the key target statement: %s", got)
	}
}
