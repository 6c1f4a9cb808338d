package inspector

import (
	"context"
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/turns"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Reader is what the pages read.
type Reader interface {
	Session(ctx context.Context, id string) (projection.Session, error)
	SessionPage(ctx context.Context, owner, app string, afterCreated time.Time, afterID string, limit int) ([]projection.Session, error)
	HistoryAsRun(ctx context.Context, session string) ([]json.RawMessage, error)
	Turns(ctx context.Context, session string) ([]projection.Turn, error)
	LastTurn(ctx context.Context, session string) (projection.Turn, error)
	Turn(ctx context.Context, session, turn string) (projection.Turn, error)
	LastSeq(ctx context.Context, session string) (int64, error)
	Watch(session string) (<-chan struct{}, func())
	PendingInterrupts(ctx context.Context, session string) ([]projection.Interrupt, error)
	Audit(ctx context.Context, session string) ([]projection.AuditEntry, error)
	Plan(ctx context.Context, session string) (*projection.Plan, error)
	Branches(ctx context.Context, session string) ([]projection.Session, error)
	Events(ctx context.Context, session string, after int64) ([]events.Event, error)
	Content(ctx context.Context, session, hash string) ([]byte, error)
}

// Engine is the engine the REST API drives: the pages follow its turns live and
// act through Config.Turns on it.
type Engine = turns.Engine

// SignIns keeps the inspector's sign-ins (the store).
type SignIns interface {
	CreateUISession(ctx context.Context, u projection.UISession) error
	UISession(ctx context.Context, idHash string, now time.Time) (projection.UISession, error)
	RevokeUISession(ctx context.Context, idHash string, now time.Time) error
}

// Config configures the inspector.
type Config struct {
	Engine Engine
	Reader Reader
	// Turns carries out the forms' requests — run a turn, answer, branch — as it
	// does the API's (nil: a turns.Service on Engine and Reader, without keys).
	// Give the process's one Service, so a form sent twice acts once.
	Turns   *turns.Service
	SignIns SignIns
	// Keys are the API's keys and the users they act as; AdminKeys carry the admin
	// role.
	Keys      map[string]string
	AdminKeys map[string]bool
	// Dev opens without signing in, as the user "dev", for loopback Host names only.
	Dev bool
	// PublicURL is where people reach turnlog (behind a TLS proxy, the https URL):
	// https makes the cookie Secure.
	PublicURL string
	// Replay replays a recording on a throwaway store with an engine that acts on
	// nothing (turnlog's ReplayOnly); nil: the replay page refuses.
	Replay func(ctx context.Context, recorded []events.Event) (*fsm.ReplayReport, error)
	// Limits bound the JSON a form sends (an answer's edited arguments; nil:
	// events.DefaultLimits).
	Limits *events.Limits
	// SignInTTL is how long a sign-in lasts (default 12h).
	SignInTTL time.Duration
	Clock     func() time.Time
}

// Server serves the inspector's pages.
type Server struct {
	cfg     Config
	pages   map[string]*template.Template
	e       *echo.Echo
	devCSRF string            // under --dev, the forms' token: random for the process
	keys    map[string]apiKey // the API's keys by hashOf

	stopping chan struct{} // closed by Stop: live streams end
	stopOnce sync.Once
}

// Stop ends every live stream (call it before shutting the HTTP server down: a
// stream otherwise lasts until its browser goes away).
func (s *Server) Stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

// New builds the inspector. Its handler serves paths under /ui/ only.
func New(cfg Config) (*Server, error) {
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.SignInTTL <= 0 {
		cfg.SignInTTL = 12 * time.Hour
	}
	if cfg.Turns == nil {
		cfg.Turns = turns.New(turns.Config{Engine: cfg.Engine, Reader: cfg.Reader})
	}
	s := &Server{cfg: cfg, pages: map[string]*template.Template{}, devCSRF: randomToken(), keys: map[string]apiKey{},
		stopping: make(chan struct{})}
	for k, user := range cfg.Keys {
		s.keys[hashOf(k)] = apiKey{user: user, admin: cfg.AdminKeys[k]}
	}
	for _, page := range []string{"signin", "sessions", "session", "audit", "replay", "timeline", "conflict", "error", "evals"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, err
		}
		s.pages[page] = t
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorPage
	e.Use(s.secureHeaders)
	if cfg.Dev {
		e.Use(loopbackOnly)
	}
	e.Use(s.sameOriginPosts, capBodies)
	assets, _ := fs.Sub(assetFS, "assets")
	e.GET("/ui/assets/*", echo.WrapHandler(http.StripPrefix("/ui/assets/", http.FileServer(http.FS(assets)))))
	e.GET("/ui/signin", s.signInForm)
	e.POST("/ui/signin", s.signIn)
	ui := e.Group("/ui", s.signedIn)
	ui.POST("/signout", s.signOut, s.checkCSRF)
	ui.GET("/", s.sessionList)
	ui.GET("/sessions/:id", s.sessionPage)
	ui.POST("/sessions/:id/turns", s.runTurn, s.checkCSRF)
	ui.POST("/sessions/:id/answers", s.answer, s.checkCSRF)
	ui.POST("/sessions/:id/grants/:grant/revoke", s.revokeGrant, s.checkCSRF)
	ui.POST("/sessions/:id/branches", s.branch, s.checkCSRF)
	ui.GET("/sessions/:id/audit", s.auditPage)
	ui.GET("/sessions/:id/turns/:turn", s.timelinePage)
	ui.POST("/sessions/:id/turns/:turn/revert", s.revertTurn, s.checkCSRF)
	ui.POST("/sessions/:id/revert", s.revertTo, s.checkCSRF)
	ui.GET("/sessions/:id/live", s.live)
	ui.GET("/sessions/:id/export", s.export)
	ui.GET("/replay", s.replayForm)
	ui.GET("/evals", s.evalsPage)
	ui.POST("/replay", s.replay, s.checkCSRF)
	s.e = e
	return s, nil
}

// Handler is the inspector's http.Handler, for paths under /ui/.
func (s *Server) Handler() http.Handler { return s.e }

// secureHeaders sends every answer with the policy that keeps a page from being
// framed or running script it did not load from /ui/assets.
func (s *Server) secureHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		return next(c)
	}
}

// loopbackOnly answers only requests whose Host is a loopback name: --dev needs no
// sign-in, so a page of another site must not reach it through DNS rebinding.
func loopbackOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		host := c.Request().Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if host != "localhost" && host != "127.0.0.1" && host != "::1" {
			return echo.NewHTTPError(http.StatusMisdirectedRequest, "under --dev the inspector answers only localhost, 127.0.0.1 and [::1]")
		}
		return next(c)
	}
}

// sameOriginPosts refuses a post another site's page made: the browser says so in
// Sec-Fetch-Site, or its Origin is neither this server's Host nor the public URL's
// (a TLS proxy in front may send turnlog another Host than the browser used).
// SameSite=Strict keeps the cookie off such posts; this also stops a sign-in forced
// on a browser, and posts to a --dev server, which needs no cookie.
func (s *Server) sameOriginPosts(next echo.HandlerFunc) echo.HandlerFunc {
	public := ""
	if u, err := url.Parse(s.cfg.PublicURL); err == nil && u.Host != "" {
		public = u.Scheme + "://" + u.Host
	}
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			return next(c)
		}
		site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
		switch {
		case site == "cross-site" || site == "same-site" || origin == "null":
		case site == "same-origin": // the browser's own word, which no page can change
			return next(c)
		case origin == "" || sameHost(origin, r.Host) || (public != "" && strings.EqualFold(origin, public)):
			return next(c)
		}
		return echo.NewHTTPError(http.StatusForbidden, "a form of another site may not post here")
	}
}

func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host == host
}

// capBodies caps every post's body before anything reads it: an uploaded fixture at
// MaxFixtureBytes (and a little for the rest of its form), any other form at 1 MiB.
func capBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := c.Request(); r.Body != nil && r.Method == http.MethodPost {
			limit := int64(1 << 20)
			if r.URL.Path == "/ui/replay" {
				limit = MaxFixtureBytes + 64<<10
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
		}
		return next(c)
	}
}

// page is what every page template gets.
type page struct {
	Title string
	User  string
	Dev   bool
	CSRF  string
	Data  any
}

func (s *Server) render(c echo.Context, status int, name, title string, data any) error {
	p := page{Title: title, Dev: s.cfg.Dev, Data: data}
	if u, ok := c.Get(signInKey).(projection.UISession); ok {
		p.User, p.CSRF = u.User, u.CSRF
	}
	var b strings.Builder
	if err := s.pages[name].Execute(&b, p); err != nil {
		return err
	}
	return c.HTML(status, b.String())
}

// errorPage says what went wrong, with the API's message, as a page.
func (s *Server) errorPage(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := http.StatusInternalServerError, "internal error"
	var te *events.Error
	switch {
	case asError(err, &te) && te.Code == events.CodeInternal: // its details are the server's, as in the API
	case asError(err, &te):
		status, msg = statusOf(te.Code), te.Public()
	default:
		if he, ok := err.(*echo.HTTPError); ok {
			status, msg = he.Code, strings.TrimSpace(stringOf(he.Message))
		}
	}
	_ = s.render(c, status, "error", http.StatusText(status), map[string]any{"Status": status, "Message": msg})
}
