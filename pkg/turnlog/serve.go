package turnlog

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/adapters/delivery/webhook"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/inspector"
)

// ServeOptions say who may call the REST API.
type ServeOptions struct {
	// Keys maps bearer API keys to the users they act as.
	Keys map[string]string
	// AdminKeys are the keys that carry the admin role (the webhook deliveries'
	// routes need it).
	AdminKeys map[string]bool
	// Dev serves without keys, every request acting as the user "dev" (loopback
	// Host headers only).
	Dev bool
	// Logger writes the request log and what the approval expiry does.
	Logger zerolog.Logger
	// IdempotencyTTL is how long an Idempotency-Key is remembered (default 24h).
	IdempotencyTTL time.Duration
	// ShutdownGrace is how long running turns get to end once ctx ends (default
	// 30s): new turns are refused meanwhile, and those still running then are
	// canceled with the reason "shutdown".
	ShutdownGrace time.Duration
	// RetentionSweep is how often sessions past their app's retention are erased
	// (default DefaultRetentionSweep).
	RetentionSweep time.Duration
	// PublicURL is where people reach turnlog (behind a TLS proxy, its https URL):
	// with https the inspector's cookie is Secure.
	PublicURL string
	// BodyLimit caps a request's body (default "1M"); Limits bound the shape of its
	// JSON (nil: events.DefaultLimits), in the API and the inspector alike.
	BodyLimit string
	Limits    *events.Limits
	// Conns bound the connections clients may hold and for how long (nil:
	// DefaultConnLimits).
	Conns *ConnLimits
}

// ConnLimits bound the connections clients may hold of Serve and for how long (see
// httpapi.ConnLimits).
type ConnLimits = httpapi.ConnLimits

// DefaultConnLimits are Serve's connection limits unless told otherwise.
var DefaultConnLimits = httpapi.DefaultConnLimits

// Handler is the REST API (docs/api.md) over this log, with /metrics, and the web
// inspector under /ui/; and a function that ends their live streams (call it before
// shutting the HTTP server down).
func (t *Turnlog) Handler(s ServeOptions) (http.Handler, func()) {
	service := t.Turns
	if s.IdempotencyTTL > 0 {
		service = service.WithKeyTTL(s.IdempotencyTTL)
	}
	api := httpapi.New(httpapi.Config{Engine: t.Engine, Reader: t.Store, Turns: service, Keys: s.Keys, AdminKeys: s.AdminKeys, Dev: s.Dev,
		BodyLimit: s.BodyLimit, Limits: s.Limits,
		Deliveries: deliveries{t.Store, t.webhooks}, Erasures: t.Store,
		Ready: t.ready, Metrics: t.metrics.Handler(), Meter: t.metrics, Logger: s.Logger})
	ui, err := inspector.New(inspector.Config{Engine: t.Engine, Reader: t.Store, Turns: service, SignIns: t.Store, Keys: s.Keys, AdminKeys: s.AdminKeys,
		Dev: s.Dev, PublicURL: s.PublicURL, Replay: t.ReplayOnly, Limits: s.Limits})
	if err != nil {
		panic(err) // the embedded templates parse: a test renders every page
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui.Handler())
	mux.Handle("/ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	mux.Handle("/", api.Handler())
	return mux, func() { api.Stop(); ui.Stop() }
}

// Serve serves the REST API on ln until ctx ends, rejecting approvals whose
// expires_in has passed meanwhile. Then it stops: new turns, answers and cancels are
// refused (503 shutting_down, and /readyz says not ready) while the turns running
// get ShutdownGrace to end; those still running then are canceled with the reason
// "shutdown" (their tools stopped). Suspended turns stay suspended. Then live
// streams end, and requests still in flight get a few seconds.
func (t *Turnlog) Serve(ctx context.Context, ln net.Listener, s ServeOptions) error {
	if len(s.Keys) == 0 && !s.Dev {
		return errors.New("no API keys: set ServeOptions.Keys (or Dev for a development server)")
	}
	handler, stop := t.Handler(s)
	go expireApprovals(ctx, t.Engine, s.Logger)
	go sweepRetention(ctx, t.Engine, s.RetentionSweep, s.Logger)
	if t.cluster != nil {
		go recoverOrphans(ctx, t.Engine, s.Logger)
	}
	defer t.startDelivery(ctx)() // ends with ctx
	conns := httpapi.DefaultConnLimits
	if s.Conns != nil {
		conns = *s.Conns
	}
	srv := httpapi.NewHTTPServer(handler, ln, conns)
	t.metrics.WatchConnections(srv.Open, srv.Refused)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace := s.ShutdownGrace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	drainCtx, cancelDrain := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancelDrain()
	s.Logger.Info().Dur("grace", grace).Msg("stopping: new turns are refused; running turns get the grace period to end")
	drained := t.Engine.Drain(drainCtx)
	if drained != nil {
		s.Logger.Error().Err(drained).Msg("stopping")
	}
	stop() // live streams end: every turn they follow has ended
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// expireApprovals rejects approvals whose expires_in has passed, once a second, until
// ctx ends.
func expireApprovals(ctx context.Context, e *fsm.Engine, log zerolog.Logger) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			results, err := e.ExpireDue(ctx)
			if err != nil {
				log.Error().Err(err).Msg("expire approvals")
			}
			for _, r := range results {
				log.Info().Str("session", r.Session).Str("turn", r.TurnID).Str("status", r.Status).Msg("approval expired; turn resumed")
			}
		}
	}
}

// recoverOrphans takes up, on a store several nodes share, the turns of nodes that
// went away: every lease period it recovers the running turns whose lease expired,
// until ctx ends.
func recoverOrphans(ctx context.Context, e *fsm.Engine, log zerolog.Logger) {
	tick := time.NewTicker(e.LeaseTTL())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		results, err := e.Recover(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error().Err(err).Msg("recover turns of nodes that went away")
		}
		for _, r := range results {
			log.Info().Str("session", r.Session).Str("turn", r.TurnID).Str("status", r.Status).Msg("recovered a turn whose node went away")
		}
	}
}

// DefaultRetentionSweep is how often Serve erases sessions past their app's retention.
const DefaultRetentionSweep = 10 * time.Minute

// sweepRetention erases the sessions idle past their app's retention at once and
// then every `every`, until ctx ends. Apps without retention make it return.
func sweepRetention(ctx context.Context, e *fsm.Engine, every time.Duration, log zerolog.Logger) {
	if !slices.ContainsFunc(e.Apps(), func(a *fsm.App) bool { return a.Retention > 0 }) {
		return
	}
	if every <= 0 {
		every = DefaultRetentionSweep
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		receipts, err := e.EraseIdle(ctx)
		if err != nil && ctx.Err() == nil {
			log.Error().Err(err).Msg("retention sweep")
		}
		for _, r := range receipts {
			log.Info().Str("erasure", r.ID).Str("session", r.Subject).Int("sessions", r.Counts.Sessions).Int("events", r.Counts.Events).Msg("erased by retention")
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// deliveries are the outbox's deliveries with the deliverer to wake when one is sent
// again.
type deliveries struct {
	Store
	*webhook.Deliverer
}

// ready says whether this node takes work: its store answers with the schema this
// binary knows, and it is not stopping.
func (t *Turnlog) ready(ctx context.Context) error {
	if t.Engine.Draining() {
		return events.Errorf(events.CodeShuttingDown, "turnlog is shutting down")
	}
	return t.Store.Ready(ctx)
}
