package fsm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Leaser is a store shared by several nodes: a node holds a session's lease while it
// drives a turn of it, so that a turn runs on one node at a time; the run's appends
// carry the lease (Cluster.AppendLeased) and are refused once it is lost.
type Leaser interface {
	// AcquireLease takes session's lease for node until ttl from now, when it is free,
	// expired or node's already, and returns its new token. Errors: conflict (another
	// node holds it).
	AcquireLease(ctx context.Context, session, node string, ttl time.Duration) (int64, error)
	// RenewLease extends the lease with token by ttl from now. Errors: conflict (it was
	// lost).
	RenewLease(ctx context.Context, session string, token int64, ttl time.Duration) error
	// ReleaseLease gives the lease with token up.
	ReleaseLease(ctx context.Context, session string, token int64) error
}

// DefaultLeaseTTL is how long a session's lease lasts without renewal.
const DefaultLeaseTTL = 15 * time.Second

// runLease is a run's hold on its session's lease: taken before the run (lock) or
// with its first append (lockToAppend), renewed by an append once a third of the TTL
// has gone since the last renewal and, between appends, by a timer, and given up
// with the append that ends the run (or at unlock). Appends are made under mu; the
// renewer only reads what it was given.
type runLease struct {
	mu        sync.Mutex
	token     int64        // 0: not held
	renewedAt atomic.Int64 // when the last renewal was sent (unix ns): the lease lasts a TTL from after it
	stopRenew func()
	over      bool // unlock let the session go: the run appends no more
}

// hold starts holding token, taken or renewed by a statement sent at sent: renewed
// until dropped.
func (l *runLease) hold(e *Engine, h *runHandle, token int64, sent time.Time) {
	l.token = token
	l.renewedAt.Store(sent.UnixNano())
	l.stopRenew = e.renewLease(h, token)
}

// drop stops renewing and gives the lease up if the run still holds it; held says it
// did (unlock, not an append, let the session go). The run appends no more.
func (l *runLease) drop(e *Engine, h *runHandle) (held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.over = true
	if l.stopRenew != nil {
		l.stopRenew()
		l.stopRenew = nil
	}
	if l.token == 0 {
		return false
	}
	e.opts.Cluster.ReleaseLease(context.Background(), h.session, l.token)
	l.token = 0
	return true
}

// appendLeased appends evs through the cluster under h's lease: taking it when the
// run holds none (yet, or since its last append gave it up), renewing it once a
// third of the TTL has gone since the last renewal, and giving it up when evs end the
// run. Errors: internal, once unlock has let the session go.
func (l *runLease) appendLeased(ctx context.Context, e *Engine, h *runHandle, after int64, evs []events.Event, unsynced bool) ([]events.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over {
		return nil, events.Errorf(events.CodeInternal, "the run of session %s let the session go: it appends no more", h.session)
	}
	lease := Lease{Session: h.session, Token: l.token, Node: e.opts.NodeID, Release: endsRun(evs)}
	renew := lease.Token == 0 || time.Since(time.Unix(0, l.renewedAt.Load())) >= e.opts.LeaseTTL/3
	if renew {
		lease.TTL = e.opts.LeaseTTL
	}
	if lease.Release && l.stopRenew != nil {
		l.stopRenew() // not to renew what the append gives up
		l.stopRenew = nil
	}
	sent := time.Now()
	out, token, err := e.opts.Cluster.AppendLeased(ctx, lease, after, evs, unsynced)
	if err != nil {
		return nil, err
	}
	switch {
	case lease.Release:
		l.token = 0
	case lease.Token == 0:
		l.hold(e, h, token, sent)
	case renew:
		l.renewedAt.Store(sent.UnixNano())
	}
	return out, nil
}

// endsRun says whether evs end the run that appends them: its turn committed,
// failed, was canceled, or waits for people.
func endsRun(evs []events.Event) bool {
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeTurnCommitted, events.TypeTurnFailed, events.TypeTurnCanceled, events.TypeTurnSuspended:
			return ev.Turn != ""
		}
	}
	return false
}

// renewLease renews token, until stopped, whenever a third of the TTL has gone since
// the last renewal (an append's or its own): it looks six times a TTL, so the lease
// never has less than half of it left. A lease it finds lost stops the turn (its
// appends are refused anyway).
func (e *Engine) renewLease(h *runHandle, token int64) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	ttl := e.opts.LeaseTTL
	go func() {
		defer close(stopped)
		tick := time.NewTicker(ttl / 6)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if time.Since(time.Unix(0, h.lease.renewedAt.Load())) < ttl/3 {
					continue // renewed since
				}
				sent := time.Now()
				err := e.opts.Cluster.RenewLease(context.Background(), h.session, token, ttl)
				if events.IsCode(err, events.CodeConflict) {
					h.stop("this node lost the session's lease: another node runs it now")
					return
				}
				if err == nil {
					h.lease.renewedAt.Store(sent.UnixNano())
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

type runKey struct{}

// bound is ctx carrying h, so that the engine's appends made with it go under h's
// lease.
func (h *runHandle) bound(ctx context.Context) context.Context {
	return context.WithValue(ctx, runKey{}, h)
}

// runOf is the run ctx carries for session (nil: none).
func runOf(ctx context.Context, session string) *runHandle {
	h, _ := ctx.Value(runKey{}).(*runHandle)
	if h == nil || h.session != session {
		return nil
	}
	return h
}

// appendEvents appends evs to session after seq after: under the lease of the run ctx
// carries, on a cluster, else through the store itself; unsynced as AppendUnsynced.
// Every append the engine makes goes through here.
func (e *Engine) appendEvents(ctx context.Context, session string, after int64, evs []events.Event, unsynced bool) ([]events.Event, error) {
	if e.opts.Cluster != nil {
		if h := runOf(ctx, session); h != nil {
			return h.lease.appendLeased(ctx, e, h, after, evs, unsynced)
		}
	}
	if unsynced {
		return e.store.AppendUnsynced(ctx, session, after, evs)
	}
	return e.store.Append(ctx, session, after, evs)
}

// newNodeID names this process among the nodes: its host name and a random suffix.
func newNodeID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// CancelRelay is a store several nodes share that passes a cancel to the node that
// runs the turn: RelayCancel sends it, and every node hears it through the function
// OnCancel registers.
type CancelRelay interface {
	RelayCancel(ctx context.Context, session, turn, reason string) error
	OnCancel(func(session, turn, reason string))
}

// cancelHere stops the turn if it runs in this process (a cancel relayed from
// another node). An interrupt (InterruptReason) stops it at its next safe point, as
// it does on the node that queued the input.
func (e *Engine) cancelHere(session, turn, reason string) {
	e.mu.Lock()
	h := e.running[session]
	here := h != nil && h.turn == turn // read under the lock setRunningTurn writes under
	e.mu.Unlock()
	switch {
	case !here:
	case reason == InterruptReason:
		h.stopSoftly(reason)
	default:
		h.stop(reason)
	}
}

// interruptElsewhere asks the node that runs the session's turn to stop it at its
// next safe point, for input queued here; the queue runs when that turn ends. The
// request is sent again each second until the turn no longer runs.
func (e *Engine) interruptElsewhere(session, turn string) {
	relay := e.opts.Cluster
	if relay == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), interruptPatience)
	defer cancel()
	for ctx.Err() == nil {
		t, err := e.relayUntilEnded(ctx, relay, session, turn, InterruptReason)
		switch {
		case err == nil && t.Status == projection.TurnSuspended:
			// It came to wait for people before it heard: canceled, as here — once the
			// node that suspended it has given the session's lease up.
			if _, cerr := e.Cancel(ctx, session, turn, InterruptReason); cerr == nil || !events.IsCode(cerr, events.CodeConflict) {
				return
			}
		case err == nil:
			return
		}
		select { // the database went away a moment: try again
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// interruptPatience bounds how long an interrupt is relayed: a turn that a tool
// holds longer than this ends when the tool does, and the queue runs then anyway.
const interruptPatience = 10 * time.Minute

// cancelElsewhere passes the cancel to the node that runs the turn, and waits for
// the turn to end (or ctx to).
func (e *Engine) cancelElsewhere(ctx context.Context, relay CancelRelay, session, turn, reason string) (projection.Turn, error) {
	return e.relayUntilEnded(ctx, relay, session, turn, reason)
}

// relayUntilEnded relays the cancel, and again each second, until the turn no longer
// runs (or ctx ends), and returns the turn as it is then.
func (e *Engine) relayUntilEnded(ctx context.Context, relay CancelRelay, session, turn, reason string) (projection.Turn, error) {
	wake, stop := e.store.Watch(session)
	defer stop()
	if err := relay.RelayCancel(ctx, session, turn, reason); err != nil {
		return projection.Turn{}, err
	}
	// A relay is not kept: one sent while the running node was reconnecting is lost,
	// so it is sent again until the turn ends (stopping a turn twice is stopping it).
	again := time.NewTicker(time.Second)
	defer again.Stop()
	for {
		t, err := e.store.Turn(ctx, session, turn)
		if err != nil || t.Status != projection.TurnRunning {
			return t, err
		}
		select {
		case <-wake:
		case <-again.C:
			if err := relay.RelayCancel(ctx, session, turn, reason); err != nil {
				return t, err
			}
		case <-ctx.Done():
			return t, ctx.Err()
		}
	}
}
