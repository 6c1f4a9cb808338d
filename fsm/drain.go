package fsm

import (
	"context"
	"time"

	"github.com/turnlog/turnlog/events"
)

// ShutdownReason is what TurnCanceled says of a turn still running when a server's
// time to stop ran out.
const ShutdownReason = "shutdown"

// Drain stops the engine taking work — a new turn, an answer, a cancel, a queued
// input's turn are refused with shutting_down — and waits for the turns running now
// to end, until ctx ends. Then it cancels those still running with ShutdownReason
// (their tools' contexts end) and waits for each to record its end, for at most
// CancelGrace more. Suspended turns stay suspended and queued inputs queued: the next
// start takes them up. Errors: internal, when a canceled turn did not end in time
// (Recover takes it up at the next start).
func (e *Engine) Drain(ctx context.Context) error {
	e.mu.Lock()
	e.draining = true
	e.mu.Unlock()
	if e.waitRunning(ctx.Done()) {
		return nil
	}
	for _, h := range e.runningHandles() {
		h.stop(ShutdownReason)
	}
	// A turn records a tool that ignores its context as abandoned after CancelGrace.
	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.CancelGrace+time.Second)
	defer cancel()
	if e.waitRunning(grace.Done()) {
		return nil
	}
	return events.Errorf(events.CodeInternal, "%d turns did not end after they were canceled; they are recovered at the next start", len(e.runningHandles()))
}

// Draining reports whether Drain was called (a server that stops is not ready).
func (e *Engine) Draining() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.draining
}

// waitRunning waits until no turn runs in this process (true), or until stop.
func (e *Engine) waitRunning(stop <-chan struct{}) bool {
	for {
		hs := e.runningHandles()
		if len(hs) == 0 {
			return true
		}
		select {
		case <-hs[0].finished:
		case <-stop:
			return false
		}
	}
}

func (e *Engine) runningHandles() []*runHandle {
	e.mu.Lock()
	defer e.mu.Unlock()
	hs := make([]*runHandle, 0, len(e.running))
	for _, h := range e.running {
		hs = append(hs, h)
	}
	return hs
}
