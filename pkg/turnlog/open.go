package turnlog

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/adapters/delivery/webhook"
	"github.com/turnlog/turnlog/adapters/observability/metrics"
	"github.com/turnlog/turnlog/adapters/observability/tracing"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/turns"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Turnlog is an open log with the engine that runs turns on it: run turns in-process
// with Engine, or serve the REST API with Serve.
type Turnlog struct {
	// Store is the log and its read models: SQLite, or PostgreSQL for a postgres://
	// DB.
	Store Store
	// Engine runs, resumes, cancels and branches turns.
	Engine *fsm.Engine
	// Turns carries out requests on turns and sessions the way the REST API and
	// the inspector do — Idempotency-Keys, on_busy, background, a stream's
	// Last-Event-ID (see package turns): what an embedder calls to act as they do.
	Turns    *turns.Service
	cluster  fsm.Cluster // what nodes share of the store (nil: one node)
	apps     *Apps
	metrics  *metrics.Metrics
	webhooks *webhook.Deliverer
	opts     Options                  // what it was opened with (ReplayOnly opens a throwaway copy)
	traces   *sdktrace.TracerProvider // the OTLP exporter's, when OTLPEndpoint is set
	// delivering is held while the deliverer runs; Close ends it and waits.
	delivering   sync.WaitGroup
	deliveryMu   sync.Mutex
	stopDelivery []context.CancelFunc
	closed       bool
}

// Open opens (or creates) the log at opts.DB and builds the config's apps on it. The
// database and its -wal and -shm must lie outside every folder a sandbox sees, or
// the apps do not load. Close it when done.
func Open(ctx context.Context, opts Options) (*Turnlog, error) {
	if opts.DB == "" {
		return nil, errors.New("no database: set Options.DB to the SQLite file of the log")
	}
	if !IsPostgres(opts.DB) { // a file of its own, which no sandbox may see
		opts.Protected = append(append([]string{}, opts.Protected...), opts.DB, opts.DB+"-wal", opts.DB+"-shm")
	}
	m := metrics.New()
	var observers multiObserver = []fsm.Observer{m, turnLogger{&opts.Logger}}
	if opts.Observer != nil {
		observers = append(observers, opts.Observer)
	}
	_, statErr := os.Stat(opts.DB)
	// Not cut short by ctx: a migration is applied whole, and a config that refuses
	// to load says why even when the caller is already stopping.
	var hooks atomic.Pointer[webhook.Deliverer]
	store, cluster, err := openStore(context.WithoutCancel(ctx), opts, m, func(n int, took time.Duration) {
		m.Committed(n, took)
		if d := hooks.Load(); d != nil {
			d.Wake()
		}
		if opts.OnCommit != nil {
			opts.OnCommit(n)
		}
	})
	if err != nil {
		return nil, err
	}
	opts.Memory, opts.log = store, store
	apps, err := LoadApps(ctx, opts)
	if err != nil {
		store.Close()
		if errors.Is(statErr, os.ErrNotExist) && !IsPostgres(opts.DB) { // nothing was ever in it: leave no file behind
			for _, f := range []string{opts.DB, opts.DB + "-wal", opts.DB + "-shm"} {
				os.Remove(f)
			}
		}
		return nil, err
	}
	eopts := fsm.Options{Clock: opts.Clock, NewID: opts.NewID, Observer: observers, CancelGrace: opts.CancelGrace, ReplayOnly: opts.ReplayOnly, Tracer: opts.Tracer,
		LeaseTTL: opts.LeaseTTL, CacheSessions: opts.CacheSessions, Cluster: cluster}
	var traces *sdktrace.TracerProvider
	if opts.OTLPEndpoint != "" && opts.Tracer == nil {
		if traces, err = tracing.OTLP(ctx, opts.OTLPEndpoint, opts.Version); err != nil {
			apps.Close()
			store.Close()
			return nil, err
		}
		eopts.Tracer = tracing.New(traces)
	}
	if eopts.Clock == nil {
		eopts.Clock = time.Now
	}
	if eopts.NewID == nil {
		eopts.NewID = NewULIDs()
	}
	deliverer, err := webhook.New(store, webhook.Options{Hooks: apps.Webhooks, Clock: eopts.Clock, Client: webhookClient(opts)})
	if err == nil && !opts.IgnoreWebhooks && !opts.ReplayOnly && !opts.ReadOnly {
		store.RouteWebhooks(deliverer.Route) // before any turn can commit
		hooks.Store(deliverer)
	}
	var engine *fsm.Engine
	if err == nil {
		engine, err = fsm.New(store, apps.List, eopts)
	}
	if err != nil {
		apps.Close()
		store.Close()
		return nil, err
	}
	var claimHold time.Duration
	if cluster != nil {
		claimHold = 2 * engine.LeaseTTL() // a node that claimed a key and went away holds it no longer
	}
	service := turns.New(turns.Config{Engine: engine, Reader: store, Keys: store, ClaimHold: claimHold, Clock: opts.Clock})
	return &Turnlog{Store: store, Engine: engine, Turns: service, cluster: cluster, apps: apps, metrics: m, webhooks: deliverer, opts: opts, traces: traces}, nil
}

// ReplayOnly replays a recorded session against this log's config on a throwaway
// store, with an engine that acts on nothing (Options.ReplayOnly): it calls no model
// and runs no tool, so an activity the recording lacks is a divergence (a
// nondeterminism error naming the path and field), never a live call.
func (t *Turnlog) ReplayOnly(ctx context.Context, recorded []events.Event) (*fsm.ReplayReport, error) {
	dir, err := os.MkdirTemp("", "turnlog-replay-only-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	opts := t.opts
	opts.DB, opts.Synchronous, opts.ReplayOnly, opts.IgnoreWebhooks = filepath.Join(dir, "replay.db"), "OFF", true, true
	if len(recorded) > 0 && recorded[0].Type == events.TypeSessionCreated {
		// The tools it cannot build without acting (its MCP servers'): as they are now.
		if sc, err := events.DecodeAs[*events.SessionCreated](recorded[0]); err == nil {
			if list, err := t.apps.Snapshot(sc.App); err == nil {
				opts.Snapshot = make(map[string]SnapshotTool, len(list))
				for _, st := range list {
					opts.Snapshot[st.Name] = st
				}
			}
		}
	}
	opts.OnCommit, opts.Observer, opts.Logger = nil, nil, zerolog.Logger{} // a replay is not the server's work
	opts.Tracer, opts.OTLPEndpoint = nil, ""
	r, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Engine.Replay(ctx, recorded)
}

// DeliverWebhooks sends the outbox's webhook deliveries until ctx ends or Close.
// Serve runs it; a program that serves Handler itself runs it too. Only one process
// on a database may (at start it takes over every attempt left held).
func (t *Turnlog) DeliverWebhooks(ctx context.Context) { t.startDelivery(ctx)() }

// startDelivery starts the deliverer (unless the log is closed) and returns what
// waits for it to stop.
func (t *Turnlog) startDelivery(ctx context.Context) (wait func()) {
	t.deliveryMu.Lock()
	defer t.deliveryMu.Unlock()
	if t.closed {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t.stopDelivery = append(t.stopDelivery, cancel)
	t.delivering.Add(1)
	go func() {
		defer t.delivering.Done()
		defer close(done)
		t.webhooks.Run(ctx)
	}()
	return func() { <-done }
}

// Apps are the apps it runs.
func (t *Turnlog) Apps() []*fsm.App { return t.apps.List }

// CommittedSecrets is Apps.CommittedSecrets of the apps it serves.
func (t *Turnlog) CommittedSecrets(ctx context.Context) ([]CommittedSecret, error) {
	return t.apps.CommittedSecrets(ctx)
}

// Close ends the apps' MCP servers and closes the log.
func (t *Turnlog) Close() error {
	t.deliveryMu.Lock()
	t.closed = true
	for _, stop := range t.stopDelivery {
		stop()
	}
	t.deliveryMu.Unlock()
	t.delivering.Wait() // an attempt cut short stays held, and the next start sends it again
	var traced error
	if t.traces != nil { // send the spans still batched, for a few seconds at most
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		traced = t.traces.Shutdown(ctx)
		cancel()
	}
	return errors.Join(t.apps.Close(), t.Store.Close(), traced)
}

// NewULIDs returns a goroutine-safe source of monotonic ULIDs.
func NewULIDs() func() string {
	var mu sync.Mutex
	entropy := ulid.Monotonic(rand.Reader, 0)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return ulid.MustNew(ulid.Timestamp(time.Now()), entropy).String()
	}
}
