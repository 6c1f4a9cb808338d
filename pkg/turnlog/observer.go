package turnlog

import (
	"errors"
	"time"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// multiObserver tells every observer what the engine does.
type multiObserver []fsm.Observer

func (m multiObserver) ModelCalled(c fsm.ModelCall) {
	for _, o := range m {
		o.ModelCalled(c)
	}
}

func (m multiObserver) ToolCalled(tool string, took time.Duration, failed bool) {
	for _, o := range m {
		o.ToolCalled(tool, took, failed)
	}
}

func (m multiObserver) TurnEnded(e fsm.TurnEnd) {
	for _, o := range m {
		o.TurnEnded(e)
	}
}

func (m multiObserver) TurnBroke(b fsm.TurnBreak) {
	for _, o := range m {
		o.TurnBroke(b)
	}
}

func (m multiObserver) AnswerWithoutEvidence(app, agent string, stood bool) {
	for _, o := range m {
		o.AnswerWithoutEvidence(app, agent, stood)
	}
}

func (m multiObserver) BudgetReached(app, agent, scope string) {
	for _, o := range m {
		o.BudgetReached(app, agent, scope)
	}
}

// turnLogger logs every turn that fails, is canceled or cannot be recorded, with its
// session, turn and code: a turn run in the background (queued, resumed by an
// expiry, recovered) has nobody else to tell.
type turnLogger struct{ log *zerolog.Logger }

func (turnLogger) ModelCalled(fsm.ModelCall)                  {}
func (turnLogger) ToolCalled(string, time.Duration, bool)     {}
func (turnLogger) AnswerWithoutEvidence(string, string, bool) {}
func (turnLogger) BudgetReached(string, string, string)       {}

func (l turnLogger) TurnEnded(e fsm.TurnEnd) {
	if e.Status != fsm.StatusFailed && e.Status != fsm.StatusCanceled {
		return
	}
	withRequest(l.log.Warn(), e.RequestID).Str("app", e.App).Str("session", e.Session).Str("turn", e.Turn).Str("status", e.Status).
		Str("code", string(e.Code)).Str("message", e.Message).Dur("took", e.Took).Msg("turn ended without committing")
}

func (l turnLogger) TurnBroke(b fsm.TurnBreak) {
	code := events.CodeInternal
	var te *events.Error
	if errors.As(b.Err, &te) {
		code = te.Code
	}
	msg := "turn could not be recorded; it is recorded as failed once the store takes writes again, or at the next start"
	if code == events.CodeConflict {
		msg = "turn could not be recorded: another node runs its session now, and ends it"
	}
	withRequest(l.log.Error(), b.RequestID).Str("session", b.Session).Str("turn", b.Turn).Str("code", string(code)).Err(b.Err).Msg(msg)
}

// withRequest names the request a turn's line is about, when a request asked for it.
func withRequest(ev *zerolog.Event, id string) *zerolog.Event {
	if id != "" {
		ev = ev.Str("request_id", id)
	}
	return ev
}
