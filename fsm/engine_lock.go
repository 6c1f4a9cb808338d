package fsm

// The session lock and the run handle: one run per session in this process, with
// its lease on a store several nodes share.

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnlog/turnlog/events"
)

// runHandle lets a person cancel the turn running on a session.
type runHandle struct {
	session  string
	lease    runLease           // the session's lease, on a store several nodes share
	turn     string             // set once TurnStarted is durable (under Engine.mu)
	from     int64              // the seq this run began at: its TurnStarted, a resume's TurnResumed (0: the turn's start is older)
	stopped  context.Context    // done when the turn is to stop now: tools' contexts end
	stopNow  context.CancelFunc // ... ends stopped
	soft     chan struct{}      // closed to stop at the next safe point (new input interrupts)
	once     sync.Once
	softOnce sync.Once
	finished chan struct{}

	mu     sync.Mutex
	reason string // why it was stopped (the first reason given)

	quiet bool // its unlock does not kick the session's queue (set before it)
	// queueEmpty: no input waited in the session's queue as of the run's last append
	// (set as a turn starts; cleared by a queue event the run appended past, and by a
	// kick that found the run here).
	queueEmpty atomic.Bool
}

func (h *runHandle) setReason(reason string) {
	h.mu.Lock()
	if h.reason == "" {
		h.reason = reason
	}
	h.mu.Unlock()
}

func (h *runHandle) why() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reason
}

func (h *runHandle) stop(reason string) {
	h.once.Do(func() {
		h.setReason(reason)
		h.stopNow()
	})
}

// stopSoftly asks the turn to stop at its next safe point, letting a running tool
// finish.
func (h *runHandle) stopSoftly(reason string) {
	h.softOnce.Do(func() {
		h.setReason(reason)
		close(h.soft)
	})
}

// Settled returns once the session is no longer held by the run of turn that wrote
// its end at seq `end` (or ctx ends). A turn's end is durable a moment before its run
// lets the session go: whoever saw the end and answers a client waits for this
// first, so the client's next turn is not refused as busy. A later run of the same
// turn (a resume after a suspension) is not waited for.
func (e *Engine) Settled(ctx context.Context, session, turn string, end int64) error {
	e.mu.Lock()
	h := e.running[session]
	held := h != nil && h.turn == turn && h.from <= end
	e.mu.Unlock()
	if !held {
		return nil
	}
	select {
	case <-h.finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lock marks a session busy in this process and, on a store several nodes share,
// takes the session's lease (renewed until unlock). Errors: conflict (a turn runs
// here, or another node holds the session), shutting_down.
func (e *Engine) lock(session string) (*runHandle, func(), error) {
	return e.lockAs(session, false)
}

// lockToAppend is lock for a run whose first act is an append (a turn's start, a
// resume's answers): on a store several nodes share, that append takes the lease, so
// no round trip of its own does; another node holding the session refuses it.
func (e *Engine) lockToAppend(session string) (*runHandle, func(), error) {
	return e.lockAs(session, true)
}

func (e *Engine) lockAs(session string, lazily bool) (*runHandle, func(), error) {
	e.mu.Lock()
	if e.draining {
		e.mu.Unlock()
		return nil, nil, events.Errorf(events.CodeShuttingDown, "turnlog is shutting down: send it again once it is back")
	}
	if e.running[session] != nil {
		e.mu.Unlock()
		return nil, nil, events.Errorf(events.CodeConflict, "session %s already has a turn running", session)
	}
	h := &runHandle{session: session, soft: make(chan struct{}), finished: make(chan struct{})}
	h.stopped, h.stopNow = context.WithCancel(context.Background())
	e.running[session] = h
	e.mu.Unlock()
	free := func() {
		e.mu.Lock()
		delete(e.running, session)
		e.mu.Unlock()
		close(h.finished)
	}
	if c := e.opts.Cluster; c != nil && !lazily {
		sent := time.Now()
		token, err := c.AcquireLease(context.Background(), session, e.opts.NodeID, e.opts.LeaseTTL)
		if err != nil {
			free()
			return nil, nil, err
		}
		h.lease.hold(e, h, token, sent)
	}
	return h, func() {
		held := h.lease.drop(e, h)
		free()
		// The next queued input may run now. A run whose last append found the queue
		// empty and gave the lease up with it has nothing to start (an input queued
		// after that append is started by whoever queued it).
		if !h.quiet && (held || !h.queueEmpty.Load()) {
			go e.kick(session)
		}
	}, nil
}

func (e *Engine) setRunningTurn(h *runHandle, turn string, from int64) {
	e.mu.Lock()
	h.turn, h.from = turn, from
	e.mu.Unlock()
}
