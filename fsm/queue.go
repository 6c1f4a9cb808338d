package fsm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// What a session does with input that arrives while a turn runs or waits for people.
const (
	OnBusyReject    = "reject"    // 409, as before
	OnBusyEnqueue   = "enqueue"   // runs after, in arrival order
	OnBusyInterrupt = "interrupt" // the turn stops at its next safe point, then the input runs
)

// OnBusyModes lists the modes.
func OnBusyModes() []string { return []string{OnBusyReject, OnBusyEnqueue, OnBusyInterrupt} }

// InterruptReason is what TurnCanceled says of a turn stopped for new input.
const InterruptReason = "interrupted by new input"

// Queued is an input in its session's queue: it will run as turn TurnID.
type Queued struct {
	TurnID   string
	Position int // 1 is next
}

func isQueueEvent(ev events.Event) bool {
	return ev.Turn == "" && (ev.Type == events.TypeInputQueued || ev.Type == events.TypeQueuedInputDropped)
}

// appendPastQueue appends evs after seq `after`; when only queued inputs (appended
// while the turn ran) came in between, it appends after them instead. It returns the
// appended events.
func (e *Engine) appendPastQueue(ctx context.Context, session string, after int64, evs []events.Event, unsynced bool) ([]events.Event, error) {
	for {
		out, err := e.appendEvents(ctx, session, after, evs, unsynced)
		if err == nil || !events.IsCode(err, events.CodeConflict) {
			return out, err
		}
		between, rerr := e.store.Events(ctx, session, after)
		if rerr != nil || len(between) == 0 {
			return nil, err
		}
		for _, ev := range between {
			if !isQueueEvent(ev) {
				return nil, err
			}
		}
		if h := runOf(ctx, session); h != nil {
			h.queueEmpty.Store(false) // its unlock looks at the queue
		}
		after = between[len(between)-1].Seq
	}
}

// appendQueueEvent appends a queue event at the end of the session's log, wherever
// that is when it commits: it belongs to no turn, so it commutes with a running
// turn's events, and a turn that appended first is no conflict.
func (e *Engine) appendQueueEvent(ctx context.Context, session string, ev events.Event) error {
	for {
		last, err := e.store.LastSeq(ctx, session)
		if err != nil {
			return err
		}
		_, err = e.appendEvents(ctx, session, last, []events.Event{ev}, false)
		if err == nil || !events.IsCode(err, events.CodeConflict) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// Enqueue adds input to a busy session's queue, durably, and returns where it stands.
// With interrupt, the turn running here is stopped at its next safe point — a tool
// already running finishes and is recorded —, and a turn waiting for people is
// canceled; either way with InterruptReason. The queue runs, in order, as soon as the
// session is free (also after a restart: Recover). Errors: invalid (empty input),
// not_found.
func (e *Engine) Enqueue(ctx context.Context, session, user, input string, interrupt bool) (Queued, error) {
	if strings.TrimSpace(input) == "" {
		return Queued{}, events.FieldError(events.CodeInvalid, "input", "is empty")
	}
	if err := storableText("input", input); err != nil {
		return Queued{}, err
	}
	ctx = context.WithoutCancel(ctx)
	s, err := e.store.Session(ctx, session)
	if err != nil {
		return Queued{}, err
	}
	app, ok := e.apps[s.App]
	if !ok {
		return Queued{}, events.Errorf(events.CodeInvalid, "session %s belongs to app %q, which is not configured", session, s.App)
	}
	input, _ = app.GuardrailPolicy.transformText(TargetModelInput, input, nil)
	turn := e.opts.NewID()
	ev, err := events.New("", "queue/"+turn, &events.InputQueued{TurnID: turn, Input: input, By: user, Interrupt: interrupt})
	if err != nil {
		return Queued{}, err
	}
	if err := e.appendQueueEvent(ctx, session, ev); err != nil {
		return Queued{}, fmt.Errorf("queue input: %w", err)
	}
	e.queuedBehind(session)
	if interrupt {
		e.interruptRunning(ctx, session)
	}
	waiting, err := e.store.Queued(ctx, session)
	if err != nil {
		return Queued{}, err
	}
	q := Queued{TurnID: turn}
	for i, w := range waiting {
		if w.Turn == turn {
			q.Position = i + 1
		}
	}
	go e.kick(session)
	return q, nil
}

// interruptRunning stops the session's turn for new input: the one running here, or
// on another node, at its next safe point; one waiting for people at once.
func (e *Engine) interruptRunning(ctx context.Context, session string) {
	e.mu.Lock()
	h := e.running[session]
	e.mu.Unlock()
	if h != nil {
		h.stopSoftly(InterruptReason)
		return
	}
	t, err := e.store.LastTurn(ctx, session)
	switch {
	case err != nil:
	case t.Status == projection.TurnSuspended:
		e.Cancel(ctx, session, t.ID, InterruptReason)
	case t.Status == projection.TurnRunning:
		go e.interruptElsewhere(session, t.ID) // it runs on another node
	}
}

// kickRetry is how long a queued input waits to start again after the store could
// not start it.
const kickRetry = time.Second

// kick starts the session's next queued input if the session is free; a turn that
// ends kicks again, so the queue drains in order. An input whose turn cannot start
// (its app is gone) is dropped with the reason.
func (e *Engine) kick(session string) {
	ctx := context.Background()
	for {
		waiting, err := e.store.Queued(ctx, session)
		if err != nil || len(waiting) == 0 {
			return
		}
		if t, err := e.store.LastTurn(ctx, session); err == nil && (t.Status == projection.TurnSuspended || t.Status == projection.TurnRunning) {
			return // it ends, or is answered, and kicks then
		}
		next := waiting[0]
		if e.queuedBehind(session) {
			return // it kicks when it ends
		}
		h, unlock, err := e.lockToAppend(session)
		if err != nil {
			return // a turn runs here (it kicks when it ends), or on another node
		}
		ctx = h.bound(ctx)
		r, err := e.prepareQueued(ctx, session, next, h)
		if err != nil {
			var te *events.Error
			switch {
			case errors.As(err, &te) && te.Code == events.CodeConflict:
				// A turn runs, or waits, or another node holds the session: whoever
				// ends it kicks then.
				h.quiet = true
				unlock()
				return
			case !errors.As(err, &te) || (te.Code != events.CodeInvalid && te.Code != events.CodeNotFound):
				// The store could not start it (a full disk): it stays queued.
				h.quiet = true
				unlock()
				time.AfterFunc(kickRetry, func() { e.kick(session) })
				return
			}
			drop := events.MustNew("", "queue/"+next.Turn, &events.QueuedInputDropped{TurnID: next.Turn, Reason: storableMessage(te.Public())})
			last, lerr := e.store.LastSeq(ctx, session)
			if lerr == nil {
				_, lerr = e.appendPastQueue(ctx, session, last, []events.Event{drop}, false)
			}
			if lerr != nil {
				h.quiet = true
				unlock()
				time.AfterFunc(kickRetry, func() { e.kick(session) })
				return
			}
			unlock()
			continue
		}
		go func() {
			defer unlock()
			_, err := r.begin(r.input)
			r.broke(err)
		}()
		return
	}
}

// queuedBehind tells the run holding session here, if one does, that input waits in
// the queue: its unlock looks (the run may have made its last append before the input
// was queued). It says whether a run held the session.
func (e *Engine) queuedBehind(session string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.running[session]
	if h != nil {
		h.queueEmpty.Store(false)
	}
	return h != nil
}

// kickAll starts the queues of every session that has one and is free (at start).
func (e *Engine) kickAll(ctx context.Context) error {
	sessions, err := e.store.QueuedSessions(ctx)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		e.kick(s)
	}
	return nil
}

// Queue lists a session's waiting inputs (none for a store that keeps no queue).
func (e *Engine) Queue(ctx context.Context, session string) ([]projection.QueuedInput, error) {
	return e.store.Queued(ctx, session)
}

// dropQueued takes a queued input out of its queue and returns it (nil: it waits in
// no queue).
func (e *Engine) dropQueued(ctx context.Context, session, turn, reason string) (*projection.QueuedInput, error) {
	waiting, err := e.store.Queued(ctx, session)
	if err != nil {
		return nil, err
	}
	for _, w := range waiting {
		if w.Turn != turn {
			continue
		}
		drop := events.MustNew("", "queue/"+turn, &events.QueuedInputDropped{TurnID: turn, Reason: reason})
		return &w, e.appendQueueEvent(ctx, session, drop)
	}
	return nil, nil
}
