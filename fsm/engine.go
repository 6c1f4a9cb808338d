package fsm

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnlog/turnlog/events"
)

// Options are an Engine's injectable sources.
type Options struct {
	Clock events.Clock
	NewID events.IDFunc
	// CacheSessions bounds how many sessions' conversations stay in memory between
	// turns (default 1024), so a turn never refolds a long history; past it the
	// least recently used is evicted (and read again when its session next runs).
	CacheSessions int
	// Observer hears model calls, tool calls and turn ends (default: nobody).
	Observer Observer
	// Tracer hears the spans of live work (nil: none).
	Tracer Tracer
	// NodeID names this node in the sessions' leases of a store several nodes share
	// (default: the host name and a random suffix); LeaseTTL is how long a lease lasts
	// unrenewed (default DefaultLeaseTTL).
	NodeID   string
	LeaseTTL time.Duration
	// Cluster, for a store several nodes share, gives the engine the sessions' leases
	// and the cancel relay (nil: one node, the store's alone).
	Cluster Cluster
	// Requests, when set, sees every model request an agent's call is built from, live
	// or replayed (for debugging and tests; the model's own streaming hook is unset).
	Requests func(path string, req ModelRequest)
	// CancelGrace is how long a canceled turn waits for a tool that ignores its
	// context before it records the call as abandoned and ends (default 5s).
	CancelGrace time.Duration
	// ReplayOnly makes an engine that acts on nothing, for replays that must not: a
	// model call or a tool call its recording lacks is never made — the model call
	// fails the turn with nondeterminism, the tool call gets a replay_only error —, so
	// the replay diverges there instead of acting.
	ReplayOnly bool
}

// DefaultCancelGrace is the default of Options.CancelGrace.
const DefaultCancelGrace = 5 * time.Second

// DefaultCancelReason is what TurnCanceled says when the caller gives no reason.
const DefaultCancelReason = "canceled by request"

// Engine runs turns of configured apps against a Store.
type Engine struct {
	store Store
	apps  map[string]*App
	opts  Options

	deltas deltaHub

	mu       sync.Mutex
	running  map[string]*runHandle // sessions with a turn in this process
	cache    *conversationCache
	draining bool // Drain was called: no new work

	filesMade   sync.Map // branch sessions whose workspace this process made or found made
	filesMaking filesMaking

	days       dayTally     // the spend this engine's calls added to each user's day
	extensions atomic.Int64 // budget extensions this engine recorded
}

// LeaseTTL is how long this engine's session leases last unrenewed.
func (e *Engine) LeaseTTL() time.Duration { return e.opts.LeaseTTL }

// New builds an engine. Every app is validated.
func New(store Store, apps []*App, opts Options) (*Engine, error) {
	if opts.Clock == nil || opts.NewID == nil {
		return nil, fmt.Errorf("engine: Clock and NewID are required")
	}
	if opts.CancelGrace <= 0 {
		opts.CancelGrace = DefaultCancelGrace
	}
	if opts.CacheSessions <= 0 {
		opts.CacheSessions = 1024
	}
	if opts.Observer == nil {
		opts.Observer = noObserver{}
	}
	if opts.Tracer == nil {
		opts.Tracer = noTracer{}
	}
	if opts.NodeID == "" {
		opts.NodeID = newNodeID()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	e := &Engine{store: store, apps: map[string]*App{}, opts: opts,
		running: map[string]*runHandle{}, cache: newConversationCache(opts.CacheSessions)}
	for _, a := range apps {
		if err := a.Validate(); err != nil {
			return nil, err
		}
		if _, dup := e.apps[a.Name]; dup {
			return nil, fmt.Errorf("app %s is defined twice", a.Name)
		}
		e.apps[a.Name] = a
	}
	if opts.Cluster != nil {
		opts.Cluster.OnCancel(e.cancelHere)
	}
	return e, nil
}

// Apps returns the configured apps, by name.
func (e *Engine) Apps() []*App {
	out := make([]*App, 0, len(e.apps))
	for _, a := range e.apps {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *App) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// App returns a configured app by name.
func (e *Engine) App(name string) (*App, bool) {
	a, ok := e.apps[name]
	return a, ok
}
