package fsm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"time"
)

// Leaser is a store shared by several nodes: a node takes a session's lease before
// it drives a turn of it, so that a turn runs on one node at a time. Appends made
// with a context that carries the lease (LeaseOf) are refused once the lease is lost.
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

// WithLease makes the appends made with ctx to session fenced by the lease token.
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

// newNodeID names this process among the nodes: its host name and a random suffix.
func newNodeID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}
