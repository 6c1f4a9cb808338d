package sqlrows

import (
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/projection"
)

// The statements both SQL stores run, written once in the numbered parameters of
// SQLite (?1, ?2, …; a bare ? is one more than the largest number before it, as
// SQLite numbers it): PostgreSQL runs them through Dollar. Only standard SQL that both dialects read alike is shared here; what one
// dialect does its own way (FTS5 or tsvector, INDEXED BY, ::text, FOR UPDATE) stays
// in its store, and so does each store's append path.

// Dollar is q with SQLite's parameters (?N, ?) as PostgreSQL's ($N). Quoted text is
// left as it is.
func Dollar(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 8)
	largest, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
			b.WriteByte(c)
		case c == '?' && !quoted:
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n := largest + 1
			if j > i+1 {
				n, _ = strconv.Atoi(q[i+1 : j])
			}
			largest = max(largest, n)
			b.WriteString("$" + strconv.Itoa(n))
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Idempotency keys: the record of (owner ?1, key ?2); a claim (its columns in
// projection.IdempotencyRecord's order, from ?1 to ?8) unless the key is recorded;
// what a claim made (session ?1, turn ?2, start seq ?3 of the claim of owner ?4, key ?5
// made at ?6, while it made nothing); and the release of such a claim (owner ?1,
// key ?2, claimed at ?3).
const (
	QKeyGet     = `SELECT owner, key, route, body_hash, session_id, turn_id, start_seq, created_at, expires_at FROM idempotency_keys WHERE owner = ?1 AND key = ?2`
	QKeyClaim   = `INSERT INTO idempotency_keys (owner, key, route, body_hash, session_id, turn_id, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (owner, key) DO NOTHING`
	QKeyTarget  = `UPDATE idempotency_keys SET session_id = ?1, turn_id = ?2, start_seq = ?3 WHERE owner = ?4 AND key = ?5 AND created_at = ?6 AND session_id = ''`
	QKeyRelease = `DELETE FROM idempotency_keys WHERE owner = ?1 AND key = ?2 AND created_at = ?3 AND session_id = ''`
)

// Session pages: after the columns of proj_sessions, an owner's (?1) sessions, of
// one app (?2, empty for all), after the cursor (created_at ?3, id ?4; ?3 empty for the
// first page), newest first, at most ?5; and the sessions branched from ?1, by
// branch point.
const (
	// QSessionHeadTail follows a session's columns (of proj_sessions s) to read its
	// SessionHead: the newest seq of its log and the length of its queue.
	QSessionHeadTail = `, (SELECT coalesce(max(seq), 0) FROM events WHERE session_id = s.id),
  (SELECT count(*) FROM proj_queue WHERE session_id = s.id AND status = 'queued') FROM proj_sessions s WHERE s.id = ?1`
	QSessionsPageWhere = ` WHERE owner = ?1 AND (app = ?2 OR ?2 = '') AND (?3 = '' OR created_at < ?3 OR (created_at = ?3 AND id < ?4)) ORDER BY created_at DESC, id DESC LIMIT ?5`
	QBranchesWhere     = ` WHERE parent_id = ?1 ORDER BY parent_seq, created_at, id`
)

// Webhook deliveries: after the outbox's columns, the deliveries of a filter
// (status ?1, webhook ?2, session ?3, each empty for any; after delivery ?4; at most ?5),
// newest first; and an attempt's outcome (status ?1, next attempt ?2, delivered at ?3,
// HTTP status ?4, error ?5 of delivery ?6's attempt ?7, while it is sending).
const (
	QDeliveriesWhere = ` WHERE (?1 = '' OR status = ?1) AND (?2 = '' OR webhook = ?2) AND (?3 = '' OR session_id = ?3)
		AND (?4 = '' OR (created_at, delivery_id) < (SELECT created_at, delivery_id FROM webhook_outbox WHERE delivery_id = ?4))
		ORDER BY created_at DESC, delivery_id DESC LIMIT ?5`
	QDeliveryOutcome = `UPDATE webhook_outbox SET status = ?1, next_at_ms = ?2, delivered_at = ?3, last_status = ?4, last_error = ?5
		WHERE delivery_id = ?6 AND status = 'sending' AND attempts = ?7`
)

// Memories: a memory saved (app ?1, owner ?2, key ?3, label ?4, text ?5, at ?6,
// vector ?7) unless its key is saved already; the id of (app ?1, owner ?2, key ?3);
// and the newest memories of (app ?1, owner ?2) that have a vector, at most ?3.
const (
	QMemorySave    = `INSERT INTO memories (app, owner, key, label, text, created_at, vector) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (app, owner, key) DO NOTHING`
	QMemoryID      = `SELECT id FROM memories WHERE app = ?1 AND owner = ?2 AND key = ?3`
	QMemoryVectors = `SELECT id, label, text, created_at, vector FROM memories WHERE app = ?1 AND owner = ?2 AND vector IS NOT NULL ORDER BY id DESC LIMIT ?3`
)

// ErasingSessions is the condition on session_id of the rows an erasure removes:
// the sessions its transaction has named in the erasing table.
const ErasingSessions = `session_id IN (SELECT session_id FROM erasing)`

// EraseStep is one statement of an erasure's transaction, what it removes (for its
// error) and the count of the receipt it adds its rows to.
type EraseStep struct {
	Count *int
	What  string
	Query string
}

// SessionEraseSteps remove the erasing sessions' rows — after their memories and
// before their blobs, which each store removes its own way — counted into c: first
// the file contents and chunks only they hold, then their references to them.
func SessionEraseSteps(c *projection.ErasureCounts) []EraseStep {
	var refs int
	return []EraseStep{
		{&c.FileContents, "file contents", `DELETE FROM contents WHERE hash IN (SELECT hash FROM content_refs WHERE ` + ErasingSessions + `)
			AND NOT EXISTS (SELECT 1 FROM content_refs r WHERE r.hash = contents.hash AND r.session_id NOT IN (SELECT session_id FROM erasing))`},
		{&c.ContentChunks, "content chunks", `DELETE FROM content_chunks WHERE hash IN (SELECT hash FROM content_refs WHERE ` + ErasingSessions + `)
			AND NOT EXISTS (SELECT 1 FROM content_refs r WHERE r.hash = content_chunks.hash AND r.session_id NOT IN (SELECT session_id FROM erasing))`},
		{&refs, "content references", `DELETE FROM content_refs WHERE ` + ErasingSessions},
		{&c.Events, "events", `DELETE FROM events WHERE ` + ErasingSessions},
		{&c.Sessions, "sessions", `DELETE FROM proj_sessions WHERE id IN (SELECT session_id FROM erasing)`},
		{&c.Turns, "turns", `DELETE FROM proj_turns WHERE ` + ErasingSessions},
		{&c.HistoryItems, "history", `DELETE FROM proj_history WHERE ` + ErasingSessions},
		{&c.Interrupts, "interrupts", `DELETE FROM proj_interrupts WHERE ` + ErasingSessions},
		{&c.QueuedInputs, "queued inputs", `DELETE FROM proj_queue WHERE ` + ErasingSessions},
		{&c.IdempotencyKeys, "idempotency keys", `DELETE FROM idempotency_keys WHERE ` + ErasingSessions},
		{&c.Deliveries, "webhook deliveries", `DELETE FROM webhook_outbox WHERE ` + ErasingSessions},
		{&refs, "eval results", `DELETE FROM proj_eval_results WHERE ` + ErasingSessions},
	}
}

// OwnerEraseSteps remove what a user (?1) keeps beyond their sessions: memories,
// idempotency keys and sign-ins, counted into c.
func OwnerEraseSteps(c *projection.ErasureCounts) []EraseStep {
	var spend int
	return []EraseStep{
		{&c.Memories, "memories", `DELETE FROM memories WHERE owner = ?1`},
		{&c.IdempotencyKeys, "idempotency keys", `DELETE FROM idempotency_keys WHERE owner = ?1`},
		{&c.SignIns, "sign-ins", `DELETE FROM ui_sessions WHERE user_name = ?1`},
		// A session's erasure keeps what it spent in its owner's days (counts, no
		// content): erasing sessions resets no budget. The owner's erasure takes it.
		{&spend, "spend", `DELETE FROM proj_spend WHERE owner = ?1`},
		{&spend, "budget extensions", `DELETE FROM proj_budget_extensions WHERE owner = ?1`},
	}
}
