package projection

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
)

// Change is one update an event makes to the read models.
type Change interface{ change() }

// SessionOpened adds a session.
type SessionOpened struct {
	Session    Session
	CreatedSeq int64
}

// TurnOpened adds a running turn.
type TurnOpened struct {
	Session, Turn string
	Seq           int64
	Input, Agent  string
	At            time.Time
}

// TurnHandedOff adds the agent a handoff gave the turn to.
type TurnHandedOff struct {
	Session, Turn, Agent string
}

// TurnProgressed adds counts and usage to a running turn.
type TurnProgressed struct {
	Session, Turn         string
	ModelCalls, ToolCalls int
	Usage                 events.Usage
	ModelMS               int64 // the time its model calls took
}

// Add folds another progress of the same turn into p.
func (p TurnProgressed) Add(o TurnProgressed) TurnProgressed {
	p.ModelCalls += o.ModelCalls
	p.ToolCalls += o.ToolCalls
	p.Usage = p.Usage.Add(o.Usage)
	p.ModelMS += o.ModelMS
	return p
}

// TurnClosed ends a turn as committed or failed.
type TurnClosed struct {
	Session, Turn string
	Status        TurnStatus
	Seq           int64
	At            time.Time
	ErrorCode     events.Code
	ErrorMessage  string
	EndAgent      string // the agent active after a committed turn
}

// HistoryAppended adds a committed turn's items to a session's conversation and
// moves its active agent. Items are canonical JSON, one per item.
type HistoryAppended struct {
	Session, Turn string
	Seq           int64
	Items         []json.RawMessage
	Agent         string
}

// InterruptOpened adds a pending interrupt.
type InterruptOpened struct {
	Interrupt Interrupt
	Seq       int64
}

// InterruptResolved answers an interrupt. Arguments, for an approval, are the ones a
// reviewer gave (an edit when they differ from the proposal); By is who answered.
type InterruptResolved struct {
	Session, ID string
	Status      InterruptStatus
	Seq         int64
	At          time.Time
	Arguments   json.RawMessage
	By          string
}

// TurnPaused moves a turn between running and suspended.
type TurnPaused struct {
	Session, Turn string
	Status        TurnStatus
}

// QueueChanged adds a queued input (Input set), or marks it started or dropped.
type QueueChanged struct {
	Session, Turn string
	Seq           int64
	Input, By     string
	Status        QueueStatus
	At            time.Time
}

func (QueueChanged) change() {}

func (InterruptOpened) change()   {}
func (InterruptResolved) change() {}
func (TurnPaused) change()        {}
func (SessionOpened) change()     {}
func (TurnOpened) change()        {}
func (TurnProgressed) change()    {}
func (TurnHandedOff) change()     {}
func (TurnClosed) change()        {}
func (HistoryAppended) change()   {}

// Changes folds one event into the read-model changes it causes. It is pure. Events
// whose whole body the read models need are decoded; for the rest only the fields
// used are read from the canonical data, which keeps a rebuild fast.
func Changes(ev events.Event) ([]Change, error) {
	switch ev.Type {
	case events.TypeModelCalled:
		if err := known(ev); err != nil {
			return nil, err
		}
		f := gjson.GetManyBytes(ev.Data, "usage", "duration_ms", "agent", "llm", "cost", "day")
		u := f[0]
		usage := events.Usage{InputTokens: u.Get("input_tokens").Int(), OutputTokens: u.Get("output_tokens").Int(),
			CachedTokens: u.Get("cached_tokens").Int(), ReasoningTokens: u.Get("reasoning_tokens").Int()}
		return []Change{TurnProgressed{Session: ev.Session, Turn: ev.Turn, ModelCalls: 1, ModelMS: f[1].Int(), Usage: usage},
			SpendAdded{Session: ev.Session, Agent: f[2].String(), LLM: f[3].String(), Usage: usage, Cost: f[4].Float(),
				Day: DayOf(f[5].String(), ev.At)}}, nil
	case events.TypeToolResulted:
		if err := known(ev); err != nil {
			return nil, err
		}
		return []Change{TurnProgressed{Session: ev.Session, Turn: ev.Turn, ToolCalls: 1}}, nil
	case events.TypeHandoffOccurred:
		if err := known(ev); err != nil {
			return nil, err
		}
		return []Change{TurnHandedOff{Session: ev.Session, Turn: ev.Turn, Agent: gjson.GetBytes(ev.Data, "to").String()}}, nil
	case events.TypeContextCompacted:
		if err := known(ev); err != nil {
			return nil, err
		}
		f := gjson.GetManyBytes(ev.Data, "usage", "agent", "llm", "cost", "day")
		u := f[0]
		return []Change{SpendAdded{Session: ev.Session, Agent: f[1].String(), LLM: f[2].String(), Cost: f[3].Float(), Day: DayOf(f[4].String(), ev.At),
			Usage: events.Usage{InputTokens: u.Get("input_tokens").Int(), OutputTokens: u.Get("output_tokens").Int(),
				CachedTokens: u.Get("cached_tokens").Int(), ReasoningTokens: u.Get("reasoning_tokens").Int()}}}, nil
	case events.TypeToolScheduled, events.TypeLoopDetected, events.TypeGuardrailChecked, events.TypeGuardrailTripped,
		events.TypeFilesChanged, events.TypeWorkspaceReverted:
		return nil, known(ev)
	case events.TypeTurnCommitted:
		if err := known(ev); err != nil {
			return nil, err
		}
		var items []json.RawMessage
		for _, it := range gjson.GetBytes(ev.Data, "items").Array() {
			items = append(items, json.RawMessage(it.Raw))
		}
		agent := gjson.GetBytes(ev.Data, "agent").String()
		return []Change{
			HistoryAppended{Session: ev.Session, Turn: ev.Turn, Seq: ev.Seq, Items: items, Agent: agent},
			TurnClosed{Session: ev.Session, Turn: ev.Turn, Status: TurnCompleted, Seq: ev.Seq, At: ev.At, EndAgent: agent},
		}, nil
	}
	p, err := events.Decode(ev)
	if err != nil {
		return nil, err
	}
	switch e := p.(type) {
	case *events.SessionCreated:
		var meta json.RawMessage
		if len(e.Metadata) > 0 {
			meta = e.Metadata
		}
		return []Change{SessionOpened{CreatedSeq: ev.Seq, Session: Session{
			ID: ev.Session, App: e.App, Owner: e.Owner, Metadata: meta, CreatedAt: ev.At, ActiveAgent: e.Agent,
		}}}, nil
	case *events.SessionBranched:
		return []Change{SessionOpened{CreatedSeq: ev.Seq, Session: Session{
			ID: ev.Session, App: e.App, Owner: e.Owner, Metadata: e.Metadata, CreatedAt: ev.At, ActiveAgent: e.Agent,
			ParentID: e.SourceSession, ParentSeq: e.SourceSeq, ParentTurn: e.SourceTurn,
		}}}, nil
	case *events.TurnStarted:
		return []Change{TurnOpened{Session: ev.Session, Turn: ev.Turn, Seq: ev.Seq, Input: e.Input, Agent: e.Agent, At: ev.At},
			QueueChanged{Session: ev.Session, Turn: ev.Turn, Seq: ev.Seq, Status: QueueStarted, At: ev.At}}, nil
	case *events.InputQueued:
		return []Change{QueueChanged{Session: ev.Session, Turn: e.TurnID, Seq: ev.Seq, Input: e.Input, By: e.By, Status: QueueWaiting, At: ev.At}}, nil
	case *events.QueuedInputDropped:
		return []Change{QueueChanged{Session: ev.Session, Turn: e.TurnID, Seq: ev.Seq, Status: QueueDropped, At: ev.At}}, nil
	case *events.ApprovalRequested:
		return []Change{InterruptOpened{Seq: ev.Seq, Interrupt: Interrupt{Session: ev.Session, Turn: ev.Turn, ID: e.InterruptID,
			Kind: e.Kind, Path: ev.Path, CallID: e.CallID, Tool: e.Tool, Arguments: e.Arguments, Reason: e.Reason,
			Rule: e.Rule, Level: e.Level, Resources: e.Resources, Alternative: e.Alternative,
			Status: InterruptPending, RequestedAt: ev.At}}}, nil
	case *events.ApprovalResolved:
		status := InterruptApproved
		if !e.Confirmed {
			status = InterruptRejected
		}
		return []Change{InterruptResolved{Session: ev.Session, ID: e.InterruptID, Status: status, Seq: ev.Seq, At: ev.At,
			Arguments: e.Arguments, By: e.By}}, nil
	case *events.ReviewRequested:
		held, err := events.Marshal(e.Response)
		if err != nil {
			return nil, err
		}
		return []Change{InterruptOpened{Seq: ev.Seq, Interrupt: Interrupt{Session: ev.Session, Turn: ev.Turn, ID: e.InterruptID,
			Kind: e.Kind, Path: ev.Path, Arguments: held, Reason: e.Reason, Rule: e.Rule, Status: InterruptPending, RequestedAt: ev.At}}}, nil
	case *events.ReviewResolved:
		status := InterruptApproved
		if e.Decision != events.DecisionApprove {
			status = InterruptRejected
		}
		return []Change{InterruptResolved{Session: ev.Session, ID: e.InterruptID, Status: status, Seq: ev.Seq, At: ev.At, By: e.By}}, nil
	case *events.BudgetReached:
		figures, err := events.Marshal(BudgetFigures{Scope: e.Scope, Level: e.Level, Agent: e.Agent, LLM: e.LLM, Day: e.Day,
			Limit: e.Limit, Spent: e.Spent, Request: e.Request, Exceeded: e.Exceeded})
		if err != nil {
			return nil, err
		}
		return []Change{InterruptOpened{Seq: ev.Seq, Interrupt: Interrupt{Session: ev.Session, Turn: ev.Turn, ID: e.InterruptID,
			Kind: events.InterruptBudget, Path: ev.Path, Arguments: figures, Reason: e.Reason, Status: InterruptPending, RequestedAt: ev.At}}}, nil
	case *events.BudgetResolved:
		status := InterruptApproved
		if e.Decision != events.BudgetExtend {
			status = InterruptRejected
		}
		out := []Change{InterruptResolved{Session: ev.Session, ID: e.InterruptID, Status: status, Seq: ev.Seq, At: ev.At, By: e.By}}
		if e.Decision == events.BudgetExtend && e.Scope != events.BudgetTurn && e.Extend != nil {
			x := BudgetExtension{Scope: e.Scope, Level: e.Level, Day: e.Day, Amounts: *e.Extend}
			if e.Level == events.BudgetOfAgent {
				x.Agent = e.Agent
			}
			out = append(out, BudgetExtended{Session: ev.Session, Seq: ev.Seq, Extension: x})
		}
		return out, nil
	case *events.EvalCaseRun:
		var failures json.RawMessage
		if len(e.Failures) > 0 {
			failures = events.MustMarshal(e.Failures)
		}
		var needs json.RawMessage
		if len(e.NeedsJudge) > 0 {
			needs = events.MustMarshal(e.NeedsJudge)
		}
		return []Change{EvalResultAdded{Log: ev.Session, Seq: ev.Seq, Result: *e, Failures: failures, NeedsJudge: needs, At: ev.At}}, nil
	case *events.TurnSuspended:
		return []Change{TurnPaused{Session: ev.Session, Turn: ev.Turn, Status: TurnSuspended}}, nil
	case *events.TurnResumed:
		return []Change{TurnPaused{Session: ev.Session, Turn: ev.Turn, Status: TurnRunning}}, nil
	case *events.TurnCanceled:
		return []Change{TurnClosed{Session: ev.Session, Turn: ev.Turn, Status: TurnCanceled, Seq: ev.Seq, At: ev.At,
			ErrorCode: events.CodeCanceled, ErrorMessage: e.Reason}}, nil
	case *events.TurnFailed:
		return []Change{TurnClosed{Session: ev.Session, Turn: ev.Turn, Status: TurnFailed, Seq: ev.Seq, At: ev.At,
			ErrorCode: e.ErrorCode, ErrorMessage: e.Message}}, nil
	}
	return nil, nil
}

// known refuses an event version no decoder knows, without decoding it.
func known(ev events.Event) error {
	if !events.Known(ev.Type, ev.V) {
		return &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("seq %d", ev.Seq),
			Message: fmt.Sprintf("unknown event type %q version %d", ev.Type, ev.V)}
	}
	return nil
}
