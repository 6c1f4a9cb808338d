package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/labstack/gommon/bytes"
	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/turns"
)

// Reader is what the API reads: the log and the projections.
type Reader interface {
	turns.Reader
	SessionPage(ctx context.Context, owner, app string, afterCreated time.Time, afterID string, limit int) ([]projection.Session, error)
	Branches(ctx context.Context, session string) ([]projection.Session, error)
	HistoryAsRun(ctx context.Context, session string) ([]json.RawMessage, error)
	Audit(ctx context.Context, session string) ([]projection.AuditEntry, error)
	Plan(ctx context.Context, session string) (*projection.Plan, error)
	Ping(ctx context.Context) error
}

// Engine is the part of the turn engine the API drives: what requests act through
// (turns.Engine), and erasure.
type Engine interface {
	turns.Engine
	// EraseSession and EraseUser erase (see fsm.Engine.EraseSession, EraseUser).
	EraseSession(ctx context.Context, session, by string, cascade bool) (projection.ErasureReceipt, error)
	EraseUser(ctx context.Context, user, by string) (projection.ErasureReceipt, error)
	// Spend reports a session's spend and its budgets (see fsm.Engine.Spend).
	Spend(ctx context.Context, session string) (*fsm.SessionSpend, error)
}

// Config configures a Server.
type Config struct {
	Engine Engine
	Reader Reader
	// Turns carries out the write requests (nil: a turns.Service on Engine, Reader
	// and Idempotency). Give the one the process's other transports use, so a
	// repeated key waits for its first request whichever transport took it.
	Turns *turns.Service
	// Keys maps bearer API keys to user names.
	Keys map[string]string
	// AdminKeys are the keys that carry the admin role: the routes of the whole
	// server (webhook deliveries) need it.
	AdminKeys map[string]bool
	// Deliveries lists and resends webhook deliveries (nil: no webhooks).
	Deliveries Deliveries
	// Erasures lists erasure receipts (nil: an empty list).
	Erasures Erasures
	// Dev lets requests without a key act as the user "dev", an admin.
	Dev bool
	// BodyLimit caps request bodies (default "1M").
	BodyLimit string
	// Limits bound the nesting, members, strings and arrays of a JSON body (nil:
	// events.DefaultLimits).
	Limits *events.Limits
	// Ready reports whether the store is reachable and current (for /readyz).
	Ready func(context.Context) error
	// Metrics serves /metrics; Meter hears requests and streams (both optional).
	Metrics http.Handler
	Meter   Meter
	// Idempotency keeps write requests' Idempotency-Keys (nil: the header is ignored)
	// for IdempotencyTTL (default 24h); Clock is the time they are kept by.
	Idempotency    IdempotencyKeys
	IdempotencyTTL time.Duration
	// (Idempotency, IdempotencyTTL, ClaimHold and Clock configure the Service made
	// when Turns is nil; see turns.Config.)
	// ClaimHold, on a store several nodes share, is how long a key claimed by a request
	// that has made nothing yet is taken to be in progress on another node: a repeat
	// within it is a 409, after it the claim counts as abandoned and the repeat acts.
	// 0 (one node): a claim no request of this process holds is abandoned at once.
	ClaimHold time.Duration
	Clock     func() time.Time
	// Logger writes the request log (default: nothing).
	Logger zerolog.Logger
}

// Server is the HTTP API.
type Server struct {
	cfg       Config
	limits    events.Limits
	bodyLimit int64 // BodyLimit in bytes
	routes    routeTable
	turns     *turns.Service
	meter     Meter
	e         *echo.Echo
	stopping  chan struct{} // closed by Stop: live streams end
	stopOnce  sync.Once
}

// New builds the API's echo instance with every route.
func New(cfg Config) *Server {
	if cfg.BodyLimit == "" {
		cfg.BodyLimit = "1M"
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.IPExtractor = echo.ExtractIPDirect()
	s := &Server{cfg: cfg, e: e, stopping: make(chan struct{}), meter: cfg.Meter, limits: events.DefaultLimits}
	if cfg.Limits != nil {
		s.limits = *cfg.Limits
	}
	s.bodyLimit, _ = bytes.Parse(cfg.BodyLimit)
	if s.turns = cfg.Turns; s.turns == nil {
		s.turns = turns.New(turns.Config{Engine: cfg.Engine, Reader: cfg.Reader, Keys: cfg.Idempotency,
			KeyTTL: cfg.IdempotencyTTL, ClaimHold: cfg.ClaimHold, Clock: cfg.Clock})
	}
	e.HTTPErrorHandler = func(err error, c echo.Context) { errorHandler(s.methodNotAllowed(err, c), c) }
	if s.meter == nil {
		s.meter = noMeter{}
	}
	e.Use(middleware.RequestID())
	e.Use(s.logRequests)
	e.Use(middleware.Recover())
	e.Use(middleware.BodyLimit(cfg.BodyLimit))
	e.Use(requireJSON)
	if cfg.Dev {
		e.Use(loopbackHostOnly, sameOriginOnly)
	}
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/openapi.yaml", s.openapi)
	if cfg.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(cfg.Metrics))
	}
	v1 := e.Group("/v1", s.authenticate, checkIDs)
	v1.POST("/sessions", s.createSession)
	v1.GET("/sessions", s.listSessions)
	v1.GET("/sessions/:id", s.getSession)
	v1.DELETE("/sessions/:id", s.eraseSession)
	v1.DELETE("/users/:user_id/data", s.eraseUser, s.requireAdmin)
	v1.GET("/erasures", s.listErasures, s.requireAdmin)
	v1.POST("/sessions/:id/turns", s.runTurn)
	v1.GET("/sessions/:id/turns", s.listTurns)
	v1.GET("/sessions/:id/turns/:turn_id", s.getTurn)
	v1.GET("/sessions/:id/turns/:turn_id/stream", s.followTurn)
	v1.POST("/sessions/:id/turns/:turn_id/cancel", s.cancelTurn)
	v1.POST("/sessions/:id/turns/:turn_id/revert", s.revertTurn)
	v1.GET("/sessions/:id/turns/:turn_id/files", s.turnFiles)
	v1.POST("/sessions/:id/revert", s.revertSession)
	v1.POST("/sessions/:id/reverts/:revert_id/revert", s.revertRevert)
	v1.POST("/sessions/:id/compact", s.compact)
	v1.GET("/sessions/:id/history", s.history)
	v1.GET("/sessions/:id/interrupts", s.interrupts)
	v1.GET("/sessions/:id/audit", s.audit)
	v1.GET("/sessions/:id/grants", s.grants)
	v1.GET("/sessions/:id/plan", s.plan)
	v1.GET("/sessions/:id/spend", s.spend)
	v1.DELETE("/sessions/:id/grants/:grant_id", s.revokeGrant)
	v1.GET("/sessions/:id/events", s.events)
	v1.GET("/sessions/:id/branch-points", s.branchPoints)
	v1.POST("/sessions/:id/branches", s.createBranch)
	v1.GET("/sessions/:id/export", s.export)
	v1.GET("/webhooks/deliveries", s.listDeliveries, s.requireAdmin)
	v1.GET("/webhooks/deliveries/:delivery_id", s.getDelivery, s.requireAdmin)
	v1.POST("/webhooks/deliveries/:delivery_id/redeliver", s.redeliver, s.requireAdmin)
	s.routes = newRouteTable(e.Routes())
	return s
}

// Handler returns the http.Handler of the API.
func (s *Server) Handler() http.Handler { return s.e }

// Echo exposes the echo instance (for route listings).
func (s *Server) Echo() *echo.Echo { return s.e }

// Stop ends every live stream; call it before shutting the HTTP server down, which
// waits for handlers to return but does not cancel their contexts.
func (s *Server) Stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}
