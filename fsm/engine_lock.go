package fsm

// The session lock and the run handle: one run per session in this process, with
// its lease on a store several nodes share.

import (
	"context"
	"sync"
	"time"

	"github.com/turnlog/turnlog/events"
)

// runHandle lets a person cancel the turn running on a session.
type runHandle struct {
	session  string
	lease    int64              // the session's lease token on a shared store (0: none)
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
	leaser := e.opts.Cluster
	if leaser == nil {
		return h, func() {
			free()
			if !h.quiet {
				go e.kick(session) // the session is free: its next queued input may run
			}
		}, nil
	}
	ctx := context.Background()
	token, err := leaser.AcquireLease(ctx, session, e.opts.NodeID, e.opts.LeaseTTL)
	if err != nil {
		free()
		return nil, nil, err
	}
	h.lease = token
	stopRenewing := e.renewLease(leaser, h)
	return h, func() {
		stopRenewing()
		leaser.ReleaseLease(ctx, session, token)
		free()
		if !h.quiet {
			go e.kick(session)
		}
	}, nil
}

// renewLease renews h's lease a few times within each TTL until stopped; a lease it
// finds lost stops the turn (its appends are refused anyway).
func (e *Engine) renewLease(l Leaser, h *runHandle) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(e.opts.LeaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if err := l.RenewLease(context.Background(), h.session, h.lease, e.opts.LeaseTTL); events.IsCode(err, events.CodeConflict) {
					h.stop("this node lost the session's lease: another node runs it now")
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// bound is ctx with h's lease, so that the store fences the appends made with it.
func (h *runHandle) bound(ctx context.Context) context.Context {
	if h.lease == 0 {
		return ctx
	}
	return WithLease(ctx, h.session, h.lease)
}

func (e *Engine) setRunningTurn(h *runHandle, turn string, from int64) {
	e.mu.Lock()
	h.turn, h.from = turn, from
	e.mu.Unlock()
}
