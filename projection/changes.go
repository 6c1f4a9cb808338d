package projection

import (
	"encoding/json"
	"time"

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

// TurnProgressed adds counts and usage to a running turn.
type TurnProgressed struct {
	Session, Turn         string
	ModelCalls, ToolCalls int
	Usage                 events.Usage
}

// TurnClosed ends a turn as committed or failed.
type TurnClosed struct {
	Session, Turn string
	Status        TurnStatus
	Seq           int64
	At            time.Time
	ErrorCode     events.Code
	ErrorMessage  string
}

// HistoryAppended adds a committed turn's items to a session's conversation and
// moves its active agent.
type HistoryAppended struct {
	Session, Turn string
	Seq           int64
	Items         []events.Item
	Agent         string
}

func (SessionOpened) change()   {}
func (TurnOpened) change()      {}
func (TurnProgressed) change()  {}
func (TurnClosed) change()      {}
func (HistoryAppended) change() {}

// Changes folds one event into the read-model changes it causes. It is pure.
func Changes(ev events.Event) ([]Change, error) {
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
	case *events.TurnStarted:
		return []Change{TurnOpened{Session: ev.Session, Turn: ev.Turn, Seq: ev.Seq, Input: e.Input, Agent: e.Agent, At: ev.At}}, nil
	case *events.ModelCalled:
		return []Change{TurnProgressed{Session: ev.Session, Turn: ev.Turn, ModelCalls: 1, Usage: e.Usage}}, nil
	case *events.ToolResulted:
		return []Change{TurnProgressed{Session: ev.Session, Turn: ev.Turn, ToolCalls: 1}}, nil
	case *events.TurnCommitted:
		return []Change{
			HistoryAppended{Session: ev.Session, Turn: ev.Turn, Seq: ev.Seq, Items: e.Items, Agent: e.Agent},
			TurnClosed{Session: ev.Session, Turn: ev.Turn, Status: TurnCommitted, Seq: ev.Seq, At: ev.At},
		}, nil
	case *events.TurnFailed:
		return []Change{TurnClosed{Session: ev.Session, Turn: ev.Turn, Status: TurnFailed, Seq: ev.Seq, At: ev.At,
			ErrorCode: e.ErrorCode, ErrorMessage: e.Message}}, nil
	}
	return nil, nil
}
