package sqlite

import "github.com/turnlog/turnlog/adapters/stores/sqlrows"

const (
	qLastSeq         = `SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?`
	qInsertEvent     = `INSERT INTO events (session_id, seq, turn_id, type, path, v, data, blob_hash, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qInsertBlob      = `INSERT INTO blobs (hash, size, data) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING`
	qLatestPlan      = `SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data, e.blob_hash, b.data, e.at FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = ?1 AND e.type = 'ToolResulted' AND e.data ->> '$.tool' = 'update_plan' AND NOT coalesce(e.data ->> '$.is_error', 0) AND (?2 = 0 OR e.seq <= ?2) ORDER BY e.seq DESC LIMIT 1`
	qGrantEvents     = `SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data, e.blob_hash, b.data, e.at FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = ?1 AND e.type IN ('GrantGiven', 'GrantRevoked') AND (?2 = 0 OR e.seq <= ?2) ORDER BY e.seq`
	qEventsAfter     = `SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data, e.blob_hash, b.data, e.at FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = ? AND e.seq > ? ORDER BY e.seq`
	qEventAt         = `SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data, e.blob_hash, b.data, e.at FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = ? AND e.seq = ?`
	qEventsFromID    = `SELECT e.id, e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data, e.blob_hash, b.data, e.at FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.id > ? ORDER BY e.id LIMIT ?`
	qCountEvents     = `SELECT count(*) FROM events`
	qSessionOpen     = `INSERT INTO proj_sessions (id, app, owner, metadata, created_at, created_seq, active_agent, parent_id, parent_seq, parent_turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qSessionMoved    = `UPDATE proj_sessions SET active_agent = ?, turn_count = turn_count + 1, last_commit_seq = ? WHERE id = ?`
	qTurnOpen        = `INSERT INTO proj_turns (session_id, turn_id, start_seq, status, input, agent, started_at, agents) VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, json_array(?5))`
	qTurnHandoff     = `UPDATE proj_turns SET agents = json_insert(agents, '$[#]', ?) WHERE session_id = ? AND turn_id = ?`
	qTurnProgress    = `UPDATE proj_turns SET model_calls = model_calls + ?, tool_calls = tool_calls + ?, input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, cached_tokens = cached_tokens + ?, reasoning_tokens = reasoning_tokens + ?, model_ms = model_ms + ? WHERE session_id = ? AND turn_id = ?`
	qTurnProgressSet = `UPDATE proj_turns SET model_calls = ?, tool_calls = ?, input_tokens = ?, output_tokens = ?, cached_tokens = ?, reasoning_tokens = ?, model_ms = ? WHERE session_id = ? AND turn_id = ?`
	qTurnClose       = `UPDATE proj_turns SET status = ?, end_seq = ?, ended_at = ?, error_code = nullif(?, ''), error_message = nullif(?, ''), end_agent = nullif(?, '') WHERE session_id = ? AND turn_id = ?`
	qInterruptAdd    = `INSERT INTO proj_interrupts (session_id, interrupt_id, turn_id, kind, path, call_id, tool, arguments, reason, status, requested_seq, requested_at, policy) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)`
	qInterruptSet    = `UPDATE proj_interrupts SET status = ?1, resolved_seq = ?2, resolved_at = ?3, answered_by = ?6, edited_arguments = iif(?1 = 'approved' AND ?7 IS NOT arguments, ?7, NULL) WHERE session_id = ?4 AND interrupt_id = ?5`
	qInterruptEnd    = `UPDATE proj_interrupts INDEXED BY proj_interrupts_pending SET status = 'closed', resolved_seq = ?, resolved_at = ? WHERE session_id = ? AND turn_id = ? AND status = 'pending'`
	qQueueAdd        = `INSERT INTO proj_queue (session_id, turn_id, input, by_user, status, queued_seq, queued_at) VALUES (?, ?, ?, ?, 'queued', ?, ?)`
	qQueueEnd        = `UPDATE proj_queue SET status = ?, ended_seq = ? WHERE session_id = ? AND turn_id = ? AND status = 'queued'`
	qQueued          = `SELECT session_id, turn_id, input, by_user, status, queued_at, queued_seq FROM proj_queue INDEXED BY proj_queue_waiting WHERE session_id = ? AND status = 'queued' ORDER BY queued_seq`
	qQueueSessions   = `SELECT DISTINCT session_id FROM proj_queue INDEXED BY proj_queue_waiting WHERE status = 'queued' ORDER BY session_id`
	qTurnPause       = `UPDATE proj_turns SET status = ? WHERE session_id = ? AND turn_id = ?`
	qPending         = `SELECT session_id, turn_id, interrupt_id, kind, path, coalesce(call_id, ''), coalesce(tool, ''), arguments, coalesce(reason, ''), status, requested_at, coalesce(policy, '{}') FROM proj_interrupts WHERE session_id = ? AND status = 'pending' ORDER BY requested_seq`

	// qLineage names a session (?1) and the sources it was branched from, each with the
	// seq up to which it contributes.
	qLineage = `WITH RECURSIVE lineage (ancestor, upto, depth) AS (
    SELECT ?1, NULL, 0
    UNION ALL
    SELECT s.parent_id, s.parent_seq, l.depth + 1 FROM lineage l JOIN proj_sessions s ON s.id = l.ancestor WHERE s.parent_id IS NOT NULL
)`
	qSessionCols  = `SELECT id, app, owner, metadata, created_at, active_agent, turn_count, last_commit_seq, parent_id, parent_seq, parent_turn FROM proj_sessions`
	qSession      = qSessionCols + ` WHERE id = ?`
	qSessionHead  = `SELECT s.id, s.app, s.owner, s.metadata, s.created_at, s.active_agent, s.turn_count, s.last_commit_seq, s.parent_id, s.parent_seq, s.parent_turn` + sqlrows.QSessionHeadTail
	qSessionsPage = qSessionCols + sqlrows.QSessionsPageWhere
	qBranchesOf   = qSessionCols + sqlrows.QBranchesWhere
	// qLineageOf lists a session's sources, oldest first, each with the seq up to
	// which it contributes (NULL: the session itself, all of it); qHistoryOf and
	// qHistoryUpTo read one source's items in the primary key's order, so no read
	// of the history sorts.
	qLineageOf   = qLineage + ` SELECT ancestor, upto FROM lineage ORDER BY depth DESC`
	qHistoryOf   = `SELECT item FROM proj_history WHERE session_id = ? ORDER BY seq, idx`
	qHistoryUpTo = `SELECT item FROM proj_history WHERE session_id = ? AND seq <= ? ORDER BY seq, idx`
	// qHistoryAsRun is the history (every source's items up to its branch point,
	// oldest source first) with, beside each call a reviewer edited, the
	// arguments it ran with and who edited them.
	qHistoryAsRun = qLineage + ` SELECT h.item, i.edited_arguments, coalesce(i.answered_by, '') FROM lineage l JOIN proj_history h ON h.session_id = l.ancestor AND (l.upto IS NULL OR h.seq <= l.upto)
LEFT JOIN proj_interrupts i ON h.item ->> '$.type' = 'function_call' AND i.session_id = h.session_id AND i.turn_id = h.turn_id
     AND i.path = (h.item ->> '$.agent') || '/tool/' || (h.item ->> '$.call_id') || '/approval' AND i.edited_arguments IS NOT NULL
ORDER BY l.depth DESC, h.seq, h.idx`
	qTurnCols     = `SELECT session_id, turn_id, status, agent, input, start_seq, end_seq, started_at, ended_at, model_calls, tool_calls, input_tokens, output_tokens, cached_tokens, reasoning_tokens, model_ms, error_code, error_message, end_agent, agents FROM proj_turns`
	qTurns        = qTurnCols + ` WHERE session_id = ? ORDER BY start_seq`
	qTurn         = qTurnCols + ` WHERE session_id = ? AND turn_id = ?`
	qTurnEndingAt = qTurnCols + ` WHERE session_id = ? AND end_seq = ?`
	qLastTurn     = qTurnCols + ` WHERE session_id = ? ORDER BY start_seq DESC LIMIT 1`
	qFirstTurn    = qTurnCols + ` WHERE session_id = ? ORDER BY start_seq LIMIT 1`
	qRunningTurns = qTurnCols + ` INDEXED BY proj_turns_running WHERE status = 'running' ORDER BY session_id, start_seq`
	qSuspended    = qTurnCols + ` INDEXED BY proj_turns_suspended WHERE status = 'suspended' ORDER BY session_id, start_seq`

	qSpendAdd = `INSERT INTO proj_spend (session_id, app, owner, day, agent, llm, calls, input_tokens, cached_tokens, output_tokens, reasoning_tokens, cost)
		SELECT ?1, app, owner, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8, ?9 FROM proj_sessions WHERE id = ?1
		ON CONFLICT (session_id, agent, llm, day) DO UPDATE SET calls = calls + 1, input_tokens = input_tokens + excluded.input_tokens,
		cached_tokens = cached_tokens + excluded.cached_tokens, output_tokens = output_tokens + excluded.output_tokens,
		reasoning_tokens = reasoning_tokens + excluded.reasoning_tokens, cost = cost + excluded.cost`
	qBudgetExtend = `INSERT INTO proj_budget_extensions (session_id, seq, app, owner, scope, level, agent, day, input_tokens, output_tokens, total_tokens, cost)
		SELECT ?1, ?2, app, owner, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 FROM proj_sessions WHERE id = ?1`
	qSpend = `SELECT 's', agent, '', '', '', sum(calls), sum(input_tokens), sum(cached_tokens), sum(output_tokens), sum(reasoning_tokens), 0, sum(cost)
		FROM proj_spend WHERE session_id = ?1 GROUP BY agent
		UNION ALL
		SELECT 'd', agent, '', '', '', sum(calls), sum(input_tokens), sum(cached_tokens), sum(output_tokens), sum(reasoning_tokens), 0, sum(cost)
		FROM proj_spend WHERE app = ?2 AND owner = ?3 AND day = ?4 GROUP BY agent
		UNION ALL
		SELECT 'x', agent, scope, level, day, 0, input_tokens, 0, output_tokens, 0, total_tokens, cost
		FROM proj_budget_extensions WHERE session_id = ?1 AND scope = 'session'
		UNION ALL
		SELECT 'x', agent, scope, level, day, 0, input_tokens, 0, output_tokens, 0, total_tokens, cost
		FROM proj_budget_extensions WHERE app = ?2 AND owner = ?3 AND day = ?4 AND scope = 'user_day'`

	qEvalResultAdd = `INSERT INTO proj_eval_results (session_id, seq, run_id, suite, case_name, attempt, case_session, passed, failures, input_tokens, output_tokens, cost, took_ms, at, needs_judge)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	qCreateMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`
	qMaxMigration     = `SELECT coalesce(max(version), 0) FROM schema_migrations`
	qRecordMigration  = `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`
)

// projectionTables are emptied by rebuild, children first.
var projectionTables = [...]string{"proj_interrupts", "proj_history", "proj_turns", "proj_spend", "proj_budget_extensions", "proj_eval_results", "proj_sessions", "proj_queue"}
