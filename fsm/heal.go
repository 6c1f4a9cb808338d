package fsm

import (
	"context"
	"errors"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Bounds of the wait between tries to record a broken turn as failed.
const (
	healFirstTry = 50 * time.Millisecond
	healMaxWait  = 5 * time.Second
)

// healBroken records a turn the engine could not drive on (recording it failed: a
// full disk, an I/O error) as failed as soon as the store takes writes again, so the
// session is free without a restart. It tries in the background, waiting longer
// each time, until it is recorded, the turn is no longer running in the log, or the
// engine stops (the next start's Recover takes it up then).
func (e *Engine) healBroken(session, turn string, cause error) {
	go func() {
		wait := healFirstTry
		for {
			time.Sleep(wait)
			if e.store.Closed() {
				return // nothing will write again here
			}
			done, err := e.failBroken(session, turn, cause)
			if done || errors.Is(err, errDraining) {
				return
			}
			wait = min(2*wait, healMaxWait)
		}
	}()
}

var errDraining = errors.New("draining")

// failBroken appends the broken turn's TurnFailed if it still runs in the log. It
// reports whether there is nothing more to do.
func (e *Engine) failBroken(session, turn string, cause error) (bool, error) {
	ctx := context.Background()
	h, unlock, err := e.lock(session)
	var te *events.Error
	switch {
	case errors.As(err, &te) && te.Code == events.CodeShuttingDown:
		return false, errDraining
	case err != nil:
		return false, err // a run holds the session: try again later
	}
	ctx = h.bound(ctx)
	defer unlock()
	// This is the run that writes the turn's end: whoever sees it and answers a
	// client waits until it lets the session go (Settled), as for any run.
	e.setRunningTurn(h, turn, 0)
	t, err := e.store.Turn(ctx, session, turn)
	if err != nil {
		return errors.As(err, &te) && te.Code == events.CodeNotFound, err
	}
	if t.Status != projection.TurnRunning {
		return true, nil
	}
	code := events.CodeStorageFailed
	if errors.As(cause, &te) && te.Code == events.CodeStorageFull {
		code = events.CodeStorageFull
	}
	last, err := e.store.LastSeq(ctx, session)
	if err != nil {
		return false, err
	}
	ev, err := events.New(turn, "", &events.TurnFailed{ErrorCode: code,
		Message: "turnlog could not record this turn (" + cause.Error() + "); it was ended here once the store took writes again"})
	if err != nil {
		return true, err
	}
	if _, err := e.appendEvents(ctx, session, last, []events.Event{ev}, false); err != nil {
		return false, err
	}
	e.forget(session)
	end := TurnEnd{Session: session, Turn: turn, Status: StatusFailed, Code: code, Message: "the store could not record the turn", Took: e.opts.Clock().Sub(t.StartedAt)}
	if s, err := e.store.Session(ctx, session); err == nil {
		end.App = s.App
	}
	e.opts.Observer.TurnEnded(end)
	return true, nil
}
