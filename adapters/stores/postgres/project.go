package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

const (
	qSessionOpen  = `INSERT INTO proj_sessions (id, app, owner, metadata, created_at, created_seq, active_agent, parent_id, parent_seq, parent_turn) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	qSessionMoved = `UPDATE proj_sessions SET active_agent = $1, turn_count = turn_count + 1, last_commit_seq = $2 WHERE id = $3`
	qTurnOpen     = `INSERT INTO proj_turns (session_id, turn_id, start_seq, status, input, agent, started_at, agents) VALUES ($1, $2, $3, 'running', $4, $5, $6, jsonb_build_array($5::text))`
	qTurnHandoff  = `UPDATE proj_turns SET agents = agents || jsonb_build_array($1::text) WHERE session_id = $2 AND turn_id = $3`
	qTurnProgress = `UPDATE proj_turns SET model_calls = model_calls + $1, tool_calls = tool_calls + $2, input_tokens = input_tokens + $3, output_tokens = output_tokens + $4, cached_tokens = cached_tokens + $5, reasoning_tokens = reasoning_tokens + $6, model_ms = model_ms + $7 WHERE session_id = $8 AND turn_id = $9`
	qTurnClose    = `UPDATE proj_turns SET status = $1, end_seq = $2, ended_at = $3, error_code = nullif($4, ''), error_message = nullif($5, ''), end_agent = nullif($6, '') WHERE session_id = $7 AND turn_id = $8`
	qInterruptAdd = `INSERT INTO proj_interrupts (session_id, interrupt_id, turn_id, kind, path, call_id, tool, arguments, reason, status, requested_seq, requested_at, policy) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10, $11, $12)`
	qInterruptSet = `UPDATE proj_interrupts SET status = $1, resolved_seq = $2, resolved_at = $3, answered_by = $6,
		edited_arguments = CASE WHEN $1 = 'approved' AND $7::text IS DISTINCT FROM arguments::text THEN $7::json END WHERE session_id = $4 AND interrupt_id = $5`
	qInterruptEnd = `UPDATE proj_interrupts SET status = 'closed', resolved_seq = $1, resolved_at = $2 WHERE session_id = $3 AND turn_id = $4 AND status = 'pending'`
	qQueueAdd     = `INSERT INTO proj_queue (session_id, turn_id, input, by_user, status, queued_seq, queued_at) VALUES ($1, $2, $3, $4, 'queued', $5, $6)`
	qQueueEnd     = `UPDATE proj_queue SET status = $1, ended_seq = $2 WHERE session_id = $3 AND turn_id = $4 AND status = 'queued'`
	qTurnPause    = `UPDATE proj_turns SET status = $1 WHERE session_id = $2 AND turn_id = $3`
	qSpendAdd     = `INSERT INTO proj_spend AS p (session_id, app, owner, day, agent, llm, calls, input_tokens, cached_tokens, output_tokens, reasoning_tokens, cost)
		SELECT $1, app, owner, $2, $3, $4, 1, $5, $6, $7, $8, $9 FROM proj_sessions WHERE id = $1
		ON CONFLICT (session_id, agent, llm, day) DO UPDATE SET calls = p.calls + 1, input_tokens = p.input_tokens + excluded.input_tokens,
		cached_tokens = p.cached_tokens + excluded.cached_tokens, output_tokens = p.output_tokens + excluded.output_tokens,
		reasoning_tokens = p.reasoning_tokens + excluded.reasoning_tokens, cost = p.cost + excluded.cost`
	qBudgetExtend = `INSERT INTO proj_budget_extensions (session_id, seq, app, owner, scope, level, agent, day, input_tokens, output_tokens, total_tokens, cost)
		SELECT $1, $2, app, owner, $3, $4, $5, $6, $7, $8, $9, $10 FROM proj_sessions WHERE id = $1`
	qSpend = `SELECT 's', agent, '', '', '', sum(calls)::bigint, sum(input_tokens)::bigint, sum(cached_tokens)::bigint, sum(output_tokens)::bigint,
		sum(reasoning_tokens)::bigint, 0::bigint, sum(cost)::double precision FROM proj_spend WHERE session_id = $1 GROUP BY agent
		UNION ALL
		SELECT 'd', agent, '', '', '', sum(calls)::bigint, sum(input_tokens)::bigint, sum(cached_tokens)::bigint, sum(output_tokens)::bigint,
		sum(reasoning_tokens)::bigint, 0::bigint, sum(cost)::double precision FROM proj_spend WHERE app = $2 AND owner = $3 AND day = $4 GROUP BY agent
		UNION ALL
		SELECT 'x', agent, scope, level, day, 0::bigint, input_tokens, 0::bigint, output_tokens, 0::bigint, total_tokens, cost
		FROM proj_budget_extensions WHERE session_id = $1 AND scope = 'session'
		UNION ALL
		SELECT 'x', agent, scope, level, day, 0::bigint, input_tokens, 0::bigint, output_tokens, 0::bigint, total_tokens, cost
		FROM proj_budget_extensions WHERE app = $2 AND owner = $3 AND day = $4 AND scope = 'user_day'`
	qEvalResultAdd = `INSERT INTO proj_eval_results (session_id, seq, run_id, suite, case_name, attempt, case_session, passed, failures, input_tokens, output_tokens, cost, took_ms, at, needs_judge)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`
	// One statement adds every item of a commit, numbered from 0 in order; each keeps
	// its canonical bytes (json keeps text as it is given).
	qHistoryAdd = `INSERT INTO proj_history (session_id, seq, idx, turn_id, item) SELECT $1, $2, t.ord - 1, $3, t.item::json FROM unnest($4::text[]) WITH ORDINALITY AS t(item, ord)`
)

// execer is a transaction or a connection.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func applyChanges(ctx context.Context, tx execer, changes []projection.Change) error {
	for _, c := range changes {
		var err error
		switch c := c.(type) {
		case projection.SessionOpened:
			s := c.Session
			_, err = tx.ExecContext(ctx, qSessionOpen, s.ID, s.App, s.Owner, sqlrows.NullString(string(s.Metadata)),
				sqlrows.FormatTime(s.CreatedAt), c.CreatedSeq, s.ActiveAgent, sqlrows.NullString(s.ParentID), sqlrows.NullInt(s.ParentSeq), sqlrows.NullString(s.ParentTurn))
		case projection.TurnOpened:
			_, err = tx.ExecContext(ctx, qTurnOpen, c.Session, c.Turn, c.Seq, c.Input, c.Agent, sqlrows.FormatTime(c.At))
		case projection.TurnHandedOff:
			_, err = tx.ExecContext(ctx, qTurnHandoff, c.Agent, c.Session, c.Turn)
		case projection.TurnProgressed:
			_, err = tx.ExecContext(ctx, qTurnProgress, c.ModelCalls, c.ToolCalls, c.Usage.InputTokens, c.Usage.OutputTokens,
				c.Usage.CachedTokens, c.Usage.ReasoningTokens, c.ModelMS, c.Session, c.Turn)
		case projection.TurnClosed:
			_, err = tx.ExecContext(ctx, qTurnClose, string(c.Status), c.Seq, sqlrows.FormatTime(c.At),
				string(c.ErrorCode), c.ErrorMessage, c.EndAgent, c.Session, c.Turn)
			if err == nil { // questions its turn no longer waits for
				_, err = tx.ExecContext(ctx, qInterruptEnd, c.Seq, sqlrows.FormatTime(c.At), c.Session, c.Turn)
			}
		case projection.InterruptOpened:
			i := c.Interrupt
			policy := events.MustMarshal(sqlrows.InterruptPolicy{Rule: i.Rule, Level: i.Level, Resources: i.Resources, Alternative: i.Alternative})
			_, err = tx.ExecContext(ctx, qInterruptAdd, i.Session, i.ID, i.Turn, i.Kind, i.Path, sqlrows.NullString(i.CallID),
				sqlrows.NullString(i.Tool), sqlrows.NullString(string(i.Arguments)), sqlrows.NullString(i.Reason), c.Seq, sqlrows.FormatTime(i.RequestedAt), string(policy))
		case projection.InterruptResolved:
			_, err = tx.ExecContext(ctx, qInterruptSet, string(c.Status), c.Seq, sqlrows.FormatTime(c.At), c.Session, c.ID, sqlrows.NullString(c.By), sqlrows.NullString(string(c.Arguments)))
		case projection.QueueChanged:
			if c.Status == projection.QueueWaiting {
				_, err = tx.ExecContext(ctx, qQueueAdd, c.Session, c.Turn, c.Input, c.By, c.Seq, sqlrows.FormatTime(c.At))
			} else {
				_, err = tx.ExecContext(ctx, qQueueEnd, string(c.Status), c.Seq, c.Session, c.Turn)
			}
		case projection.TurnPaused:
			_, err = tx.ExecContext(ctx, qTurnPause, string(c.Status), c.Session, c.Turn)
		case projection.HistoryAppended:
			items := make([]string, len(c.Items))
			for i, it := range c.Items {
				items[i] = string(it)
			}
			_, err = tx.ExecContext(ctx, qHistoryAdd, c.Session, c.Seq, c.Turn, items)
			if err == nil {
				_, err = tx.ExecContext(ctx, qSessionMoved, c.Agent, c.Seq, c.Session)
			}
		case projection.SpendAdded:
			_, err = tx.ExecContext(ctx, qSpendAdd, c.Session, c.Day, c.Agent, c.LLM, c.Usage.InputTokens, c.Usage.CachedTokens,
				c.Usage.OutputTokens, c.Usage.ReasoningTokens, c.Cost)
		case projection.BudgetExtended:
			x := c.Extension
			_, err = tx.ExecContext(ctx, qBudgetExtend, c.Session, c.Seq, x.Scope, x.Level, x.Agent, x.Day,
				x.Amounts.InputTokens, x.Amounts.OutputTokens, x.Amounts.TotalTokens, x.Amounts.Cost)
		case projection.EvalResultAdded:
			r := c.Result
			_, err = tx.ExecContext(ctx, qEvalResultAdd, c.Log, c.Seq, r.Run, r.Suite, r.Case, r.Attempt, r.Session, r.Passed,
				sqlrows.NullString(string(c.Failures)), r.Usage.InputTokens, r.Usage.OutputTokens, r.Cost, r.TookMS, sqlrows.FormatTime(c.At), sqlrows.NullString(string(c.NeedsJudge)))
		default:
			err = fmt.Errorf("unknown projection change %T", c)
		}
		if err != nil {
			return fmt.Errorf("apply %T: %w", c, err)
		}
	}
	return nil
}
