package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

func (w *writer) applyChanges(ctx context.Context, changes []projection.Change) error {
	for _, c := range changes {
		var err error
		switch c := c.(type) {
		case projection.SessionOpened:
			s := c.Session
			_, err = w.sessOpen.ExecContext(ctx, s.ID, s.App, s.Owner, nullString(string(s.Metadata)),
				formatTime(s.CreatedAt), c.CreatedSeq, s.ActiveAgent, nullString(s.ParentID), nullInt(s.ParentSeq), nullString(s.ParentTurn))
		case projection.TurnOpened:
			_, err = w.turnOpen.ExecContext(ctx, c.Session, c.Turn, c.Seq, c.Input, c.Agent, formatTime(c.At))
		case projection.TurnHandedOff:
			_, err = w.turnHandoff.ExecContext(ctx, c.Agent, c.Session, c.Turn)
		case projection.TurnProgressed:
			_, err = w.turnProgress.ExecContext(ctx, c.ModelCalls, c.ToolCalls,
				c.Usage.InputTokens, c.Usage.OutputTokens, c.Session, c.Turn)
		case projection.TurnClosed:
			_, err = w.turnClose.ExecContext(ctx, string(c.Status), c.Seq, formatTime(c.At),
				string(c.ErrorCode), c.ErrorMessage, c.EndAgent, c.Session, c.Turn)
			if err == nil { // questions its turn no longer waits for
				_, err = w.interruptEnd.ExecContext(ctx, c.Seq, formatTime(c.At), c.Session, c.Turn)
			}
		case projection.InterruptOpened:
			i := c.Interrupt
			policy := events.MustMarshal(interruptPolicy{Rule: i.Rule, Level: i.Level, Resources: i.Resources, Alternative: i.Alternative})
			_, err = w.interruptAdd.ExecContext(ctx, i.Session, i.ID, i.Turn, i.Kind, i.Path, nullString(i.CallID),
				nullString(i.Tool), nullString(string(i.Arguments)), nullString(i.Reason), c.Seq, formatTime(i.RequestedAt), string(policy))
		case projection.InterruptResolved:
			_, err = w.interruptSet.ExecContext(ctx, string(c.Status), c.Seq, formatTime(c.At), c.Session, c.ID, nullString(c.By), nullString(string(c.Arguments)))
		case projection.QueueChanged:
			if c.Status == projection.QueueWaiting {
				_, err = w.queueAdd.ExecContext(ctx, c.Session, c.Turn, c.Input, c.By, c.Seq, formatTime(c.At))
			} else {
				_, err = w.queueEnd.ExecContext(ctx, string(c.Status), c.Seq, c.Session, c.Turn)
			}
		case projection.TurnPaused:
			_, err = w.turnPause.ExecContext(ctx, string(c.Status), c.Session, c.Turn)
		case projection.HistoryAppended:
			// One statement adds every item: json_each numbers them from 0 in order.
			_, err = w.historyAdd.ExecContext(ctx, c.Session, c.Seq, c.Turn, string(joinArray(c.Items)))
			if err == nil {
				_, err = w.sessMoved.ExecContext(ctx, c.Agent, c.Seq, c.Session)
			}
		default:
			err = fmt.Errorf("unknown projection change %T", c)
		}
		if err != nil {
			return fmt.Errorf("apply %T: %w", c, err)
		}
	}
	return nil
}

// joinArray writes canonical items as one JSON array.
func joinArray(items []json.RawMessage) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// interruptPolicy is the policy column of an interrupt: who asks, and about what.
type interruptPolicy struct {
	Rule        string   `json:"rule"`
	Level       string   `json:"level"`
	Resources   []string `json:"resources"`
	Alternative string   `json:"alternative"`
}
