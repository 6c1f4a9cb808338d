package fsm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Leaser is a store shared by several nodes: a node takes a session's lease before
// it drives a turn of it, so that a turn runs on one node at a time; the run's
// appends carry the lease (Cluster.AppendLeased) and are refused once it is lost.
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

type leaseKey struct{}

type lease struct {
	session string
	token   int64
}

// WithLease marks ctx as a run's holding session's lease: the engine's appends made
// with it go through Cluster.AppendLeased with the token.
func WithLease(ctx context.Context, session string, token int64) context.Context {
	return context.WithValue(ctx, leaseKey{}, lease{session, token})
}

// LeaseOf is the lease token ctx carries for session (ok false: none).
func LeaseOf(ctx context.Context, session string) (int64, bool) {
	l, ok := ctx.Value(leaseKey{}).(lease)
	if !ok || l.session != session {
		return 0, false
	}
	return l.token, true
}

// appendEvents appends evs to session after seq after: fenced by the lease ctx
// carries (a run's, on a cluster), else through the store itself; unsynced as
// AppendUnsynced. Every append the engine makes goes through here.
func (e *Engine) appendEvents(ctx context.Context, session string, after int64, evs []events.Event, unsynced bool) ([]events.Event, error) {
	if c := e.opts.Cluster; c != nil {
		if token, ok := LeaseOf(ctx, session); ok {
			return c.AppendLeased(ctx, Lease{Session: session, Token: token}, after, evs, unsynced)
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
