package turnlog

import (
	"time"

	"github.com/rs/zerolog"
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

func (m multiObserver) TurnBroke(session, turn string, err error) {
	for _, o := range m {
		o.TurnBroke(session, turn, err)
	}
}

// turnLogger logs every turn that fails, is canceled or cannot be recorded, with its
// session, turn and code: a turn run in the background (queued, resumed by an
// expiry, recovered) has nobody else to tell.
type turnLogger struct{ log *zerolog.Logger }

func (turnLogger) ModelCalled(fsm.ModelCall)              {}
func (turnLogger) ToolCalled(string, time.Duration, bool) {}

func (l turnLogger) TurnEnded(e fsm.TurnEnd) {
	if e.Status != fsm.StatusFailed && e.Status != fsm.StatusCanceled {
		return
	}
	l.log.Warn().Str("app", e.App).Str("session", e.Session).Str("turn", e.Turn).Str("status", e.Status).
		Str("code", string(e.Code)).Str("message", e.Message).Dur("took", e.Took).Msg("turn ended without committing")
}

func (l turnLogger) TurnBroke(session, turn string, err error) {
	l.log.Error().Str("session", session).Str("turn", turn).Str("code", "internal").Err(err).
		Msg("turn could not be recorded; it is recovered at the next start")
}
