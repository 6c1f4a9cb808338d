package turns

import (
	"context"
	"encoding/json"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// Engine is the part of the turn engine (fsm.Engine) requests act through.
type Engine interface {
	CreateSession(ctx context.Context, app, owner string, metadata json.RawMessage) (projection.Session, error)
	Branch(ctx context.Context, source, owner string, at fsm.BranchPoint, metadata json.RawMessage) (projection.Session, error)
	StartTurn(ctx context.Context, session, input string) (*fsm.StartedTurn, error)
	Resume(ctx context.Context, session, user string, answers map[string]fsm.Answer) (*fsm.StartedTurn, error)
	Cancel(ctx context.Context, session, turn, reason string) (projection.Turn, error)
	Compact(ctx context.Context, session string) (*fsm.Result, error)
	Revert(ctx context.Context, req fsm.RevertRequest) (*fsm.Reverted, error)
	Enqueue(ctx context.Context, session, user, input string, interrupt bool) (fsm.Queued, error)
	Queue(ctx context.Context, session string) ([]projection.QueuedInput, error)
	Deltas(session string) (*fsm.DeltaSub, func())
	App(name string) (*fsm.App, bool)
	Settled(ctx context.Context, session, turn string, end int64) error
	Grants(ctx context.Context, session string) ([]fsm.GrantView, error)
	RevokeGrant(ctx context.Context, session, grant, by string) (*fsm.GrantView, error)
	SuggestedGrant(app, path, tool string, args []byte) (string, bool)
}

// Reader is what requests read of the log and its projections.
type Reader interface {
	Session(ctx context.Context, id string) (projection.Session, error)
	Turns(ctx context.Context, session string) ([]projection.Turn, error)
	Turn(ctx context.Context, session, turn string) (projection.Turn, error)
	LastTurn(ctx context.Context, session string) (projection.Turn, error)
	LastSeq(ctx context.Context, session string) (int64, error)
	Events(ctx context.Context, session string, after int64) ([]events.Event, error)
	PendingInterrupts(ctx context.Context, session string) ([]projection.Interrupt, error)
	Watch(session string) (<-chan struct{}, func())
}

// Config configures a Service.
type Config struct {
	Engine Engine
	Reader Reader
	// Keys keeps requests' Idempotency-Keys (nil: keys are ignored) for KeyTTL
	// (default 24h); Clock is the time they are kept by (default time.Now).
	Keys   Keys
	KeyTTL time.Duration
	// ClaimHold, on a store several nodes share, is how long a key claimed by a request
	// that has made nothing yet is taken to be in progress on another node: a repeat
	// within it is a conflict, after it the claim counts as abandoned and the repeat
	// acts. 0 (one node): a claim no request of this process holds is abandoned at once.
	ClaimHold time.Duration
	Clock     func() time.Time
}

// Service carries out requests on turns and sessions. One Service serves every
// transport of a process, so a repeat on one waits for its first request on another.
type Service struct {
	cfg      Config
	inflight *inflight // keys claimed by requests running in this process
}

// New returns a Service.
func New(cfg Config) *Service { return &Service{cfg: cfg, inflight: &inflight{}} }

// WithKeyTTL is the service remembering keys for ttl, sharing s's keys in flight.
func (s *Service) WithKeyTTL(ttl time.Duration) *Service {
	c := *s
	c.cfg.KeyTTL = ttl
	return &c
}
