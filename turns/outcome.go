package turns

import (
	"context"

	"github.com/turnlog/turnlog/fsm"
)

// Kind is how a request came to its turn.
type Kind int

const (
	// Started: this request started the turn, or resumed it (Outcome.Started).
	Started Kind = iota + 1
	// Repeated: an earlier request with the same key started or resumed it.
	Repeated
	// Continued: the request's After (a stream's Last-Event-ID) named it.
	Continued
	// Queued: the request's input waits in the session's queue (Position), or
	// waited there and has started since (Position 0).
	Queued
)

// Outcome is what a turn request came to: the turn it started, or the one it is
// answered with. Close it once answered.
type Outcome struct {
	Kind          Kind
	Session, Turn string
	// Started is the turn this request started or resumed (Kind Started).
	Started *fsm.StartedTurn
	// Deltas, for a request with Stream whose turn has not run yet (Started,
	// Queued), were subscribed before it started.
	Deltas *fsm.DeltaSub
	// Start is the seq the request's part of the turn began at (a resume's; 0: the
	// turn's start); After is the last event the caller has (Continued, Repeated).
	Start, After int64
	// Position is where a queued input waits (1 is next; 0: it has started), QueueSeq
	// the seq of its InputQueued.
	Position int
	QueueSeq int64
	// Background: the caller does not wait for the turn.
	Background bool

	svc  *Service
	stop func()
}

// Close ends the outcome's delta subscription.
func (o *Outcome) Close() {
	if o != nil && o.stop != nil {
		o.stop()
		o.stop = nil
	}
}

// Wait returns the turn's result once it has ended (or waits for people).
func (o *Outcome) Wait(ctx context.Context) (*fsm.Result, error) {
	if o.Started != nil {
		return o.Started.Wait()
	}
	return o.svc.Await(ctx, o.Session, o.Turn)
}

func (o *Outcome) subscribe() {
	if o.stop == nil {
		o.Deltas, o.stop = o.svc.cfg.Engine.Deltas(o.Session)
	}
}
