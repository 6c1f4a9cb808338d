package httpapi

import (
	_ "embed"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/fsm"
)

//go:embed openapi.yaml
var openAPI []byte

// Meter hears what the API does, for metrics.
type Meter interface {
	SSEClient(delta int)
	Request(method, route string, status int, took time.Duration)
}

type noMeter struct{}

func (noMeter) SSEClient(int)                              {}
func (noMeter) Request(string, string, int, time.Duration) {}

func (s *Server) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", openAPI)
}

// readyz answers 200 when the store answers and its schema is the one this binary
// knows; 503 otherwise.
func (s *Server) readyz(c echo.Context) error {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(c.Request().Context()); err != nil {
			return c.JSON(http.StatusServiceUnavailable, errorBody{Error: errorDetail{Code: "not_ready", Message: err.Error()}})
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// startedTurnKey holds the turn a request started, resumed or queued, for its log line.
const startedTurnKey = "turnlog.turn"

// logRequests writes one structured line per request, with its id, and records it.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		rid := c.Response().Header().Get(echo.HeaderXRequestID)
		c.SetRequest(c.Request().WithContext(fsm.WithRequestID(c.Request().Context(), rid)))
		err := next(c)
		if err != nil {
			c.Error(err) // write the error response now, so its status is logged
		}
		status := c.Response().Status
		took := time.Since(start)
		route := c.Path()
		if route == "" || route == "/*" { // no route matched: one label for every such path
			route = "unmatched"
		}
		s.meter.Request(c.Request().Method, route, status, took)
		var ev *zerolog.Event
		switch {
		case status >= 500:
			ev = s.cfg.Logger.Error()
		default:
			ev = s.cfg.Logger.Info()
		}
		ev = ev.Str("request_id", rid)
		if id := c.Param("id"); id != "" && strings.Contains(route, "/sessions/:id") {
			ev = ev.Str("session", id)
		}
		if turn := c.Param("turn_id"); turn != "" {
			ev = ev.Str("turn", turn)
		} else if turn, ok := c.Get(startedTurnKey).(string); ok {
			ev = ev.Str("turn", turn)
		}
		// Never a header, a query or a body: no key, token or content reaches the log.
		ev.Str("method", c.Request().Method).Str("route", route).Str("path", c.Request().URL.Path).
			Int("status", status).Dur("took", took).Str("user", userOf(c)).Msg("request")
		return nil
	}
}
