package sqlite

import (
	"context"
	"fmt"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

func (w *writer) applyChanges(ctx context.Context, changes []projection.Change) error {
	for _, c := range changes {
		var err error
		switch c := c.(type) {
		case projection.SessionOpened:
			s := c.Session
			_, err = w.sessOpen.ExecContext(ctx, s.ID, s.App, s.Owner, sqlrows.NullString(string(s.Metadata)),
				sqlrows.FormatTime(s.CreatedAt), c.CreatedSeq, s.ActiveAgent, sqlrows.NullString(s.ParentID), sqlrows.NullInt(s.ParentSeq), sqlrows.NullString(s.ParentTurn))
		case projection.TurnOpened:
			_, err = w.turnOpen.ExecContext(ctx, c.Session, c.Turn, c.Seq, c.Input, c.Agent, sqlrows.FormatTime(c.At))
		case projection.TurnHandedOff:
			_, err = w.turnHandoff.ExecContext(ctx, c.Agent, c.Session, c.Turn)
		case projection.TurnProgressed:
			_, err = w.turnProgress.ExecContext(ctx, c.ModelCalls, c.ToolCalls,
				c.Usage.InputTokens, c.Usage.OutputTokens, c.Usage.CachedTokens, c.Usage.ReasoningTokens, c.ModelMS, c.Session, c.Turn)
		case projection.TurnClosed:
			_, err = w.turnClose.ExecContext(ctx, string(c.Status), c.Seq, sqlrows.FormatTime(c.At),
				string(c.ErrorCode), c.ErrorMessage, c.EndAgent, c.Session, c.Turn)
			if err == nil { // questions its turn no longer waits for
				_, err = w.interruptEnd.ExecContext(ctx, c.Seq, sqlrows.FormatTime(c.At), c.Session, c.Turn)
			}
		case projection.InterruptOpened:
			i := c.Interrupt
			policy := events.MustMarshal(sqlrows.InterruptPolicy{Rule: i.Rule, Level: i.Level, Resources: i.Resources, Alternative: i.Alternative})
			_, err = w.interruptAdd.ExecContext(ctx, i.Session, i.ID, i.Turn, i.Kind, i.Path, sqlrows.NullString(i.CallID),
				sqlrows.NullString(i.Tool), sqlrows.NullString(string(i.Arguments)), sqlrows.NullString(i.Reason), c.Seq, sqlrows.FormatTime(i.RequestedAt), string(policy))
		case projection.InterruptResolved:
			_, err = w.interruptSet.ExecContext(ctx, string(c.Status), c.Seq, sqlrows.FormatTime(c.At), c.Session, c.ID, sqlrows.NullString(c.By), sqlrows.NullString(string(c.Arguments)))
		case projection.QueueChanged:
			if c.Status == projection.QueueWaiting {
				_, err = w.queueAdd.ExecContext(ctx, c.Session, c.Turn, c.Input, c.By, c.Seq, sqlrows.FormatTime(c.At))
			} else {
				_, err = w.queueEnd.ExecContext(ctx, string(c.Status), c.Seq, c.Session, c.Turn)
			}
		case projection.TurnPaused:
			_, err = w.turnPause.ExecContext(ctx, string(c.Status), c.Session, c.Turn)
		case projection.HistoryAppended:
			// One statement adds every item: json_each numbers them from 0 in order.
			err = w.insertHistory(ctx, c.Session, c.Seq, c.Turn, c.Items)
			if err == nil {
				_, err = w.sessMoved.ExecContext(ctx, c.Agent, c.Seq, c.Session)
			}
		case projection.SpendAdded:
			_, err = w.spendAdd.ExecContext(ctx, c.Session, c.Day, c.Agent, c.LLM, c.Usage.InputTokens, c.Usage.CachedTokens,
				c.Usage.OutputTokens, c.Usage.ReasoningTokens, c.Cost)
		case projection.BudgetExtended:
			x := c.Extension
			_, err = w.budgetExtend.ExecContext(ctx, c.Session, c.Seq, x.Scope, x.Level, x.Agent, x.Day,
				x.Amounts.InputTokens, x.Amounts.OutputTokens, x.Amounts.TotalTokens, x.Amounts.Cost)
		case projection.EvalResultAdded:
			r := c.Result
			_, err = w.evalResultAdd.ExecContext(ctx, c.Log, c.Seq, r.Run, r.Suite, r.Case, r.Attempt, r.Session, r.Passed,
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
