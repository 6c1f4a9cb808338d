package fsm

import (
	"errors"
	"time"

	"github.com/turnlog/turnlog/events"
)

// Observer hears what the engine does, for metrics and logs. Its methods must be
// cheap and must not block: they run on the turn's path.
type Observer interface {
	// ModelCalled reports a live model call (replayed calls are not reported).
	ModelCalled(ModelCall)
	// ToolCalled reports a live tool call.
	ToolCalled(tool string, took time.Duration, failed bool)
	// TurnEnded reports that a turn ended (completed, failed, canceled) or waits for
	// people (suspended: it goes on when they answer, and ends once).
	TurnEnded(TurnEnd)
	// TurnBroke reports a turn the engine could not drive on, because recording it
	// failed (a full disk, a closed store): the log still says it runs until the
	// engine records it as failed once the store takes writes again, or Recover takes
	// it up at the next start.
	TurnBroke(TurnBreak)
	// AnswerWithoutEvidence reports an answer require_evidence sent back (stood false)
	// or let stand, marked (stood true).
	AnswerWithoutEvidence(app, agent string, stood bool)
	// BudgetReached reports a turn held at a budget of scope (turn, session,
	// user_day) before agent's next model call.
	BudgetReached(app, agent, scope string)
}

// TurnBreak is a turn that could not be recorded, and why.
type TurnBreak struct {
	Session, Turn string
	RequestID     string // the request that started or resumed it ("" for none)
	Err           error
}

// ModelCall is one live model call.
type ModelCall struct {
	App, Agent string
	LLM        string
	// Cost is what the call cost by the app's price table (0 without a price).
	Cost   float64
	Took   time.Duration
	Failed bool
	Usage  events.Usage
}

// TurnEnd is how a turn ended, or that it waits for people.
type TurnEnd struct {
	App, Session, Turn string
	// Status is StatusCompleted, StatusFailed, StatusCanceled or StatusSuspended.
	Status string
	// Code and Message say why a turn failed or was canceled.
	Code    events.Code
	Message string
	// Took is the time since the turn started, time waiting for people included.
	Took time.Duration
	// RequestID is the request that started, resumed or canceled this run of the
	// turn ("" for one nobody asked for: a queued input, an expiry, a recovery).
	RequestID string
}

type noObserver struct{}

func (noObserver) ModelCalled(ModelCall)                      {}
func (noObserver) ToolCalled(string, time.Duration, bool)     {}
func (noObserver) TurnEnded(TurnEnd)                          {}
func (noObserver) TurnBroke(TurnBreak)                        {}
func (noObserver) AnswerWithoutEvidence(string, string, bool) {}
func (noObserver) BudgetReached(string, string, string)       {}

// ended tells the observer how this run's turn ended.
func (r *run) ended(status string, code events.Code, msg string) {
	end := TurnEnd{Session: r.session, Turn: r.turn, Status: status, Code: code, Message: msg, Took: r.e.opts.Clock().Sub(r.startedAt),
		RequestID: r.requestID}
	if r.app != nil {
		end.App = r.app.Name
	}
	r.e.opts.Observer.TurnEnded(end)
	r.keepSpend()
	if r.endSpan != nil {
		r.endSpan(SpanEnd{Status: status, Code: code, Seq: r.log.last()})
		r.endSpan = nil
	}
}

// broke tells the observer that a turn could not be driven on and, when the store
// could not write, has it recorded as failed once the store takes writes again.
func (e *Engine) broke(session, turn, requestID string, err error) {
	if err != nil {
		e.opts.Observer.TurnBroke(TurnBreak{Session: session, Turn: turn, RequestID: requestID, Err: err})
		if events.IsCode(err, events.CodeStorageFull) || events.IsCode(err, events.CodeStorageFailed) {
			e.healBroken(session, turn, err) // other failures are the next start's recovery's
		}
	}
}

// broke ends the span of a run the engine could not drive on, and tells the engine.
func (r *run) broke(err error) {
	if err != nil && r.endSpan != nil {
		code := events.CodeInternal
		var te *events.Error
		if errors.As(err, &te) {
			code = te.Code
		}
		r.endSpan(SpanEnd{Status: "broken", Code: code, Seq: r.log.last()})
		r.endSpan = nil
	}
	r.e.broke(r.session, r.turn, r.requestID, err)
}
