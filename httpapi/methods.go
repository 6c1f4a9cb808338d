package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
)

// MaxIDLength is the longest id a path or query may name: longer is 400 before any
// lookup, and no message echoes it whole.
const MaxIDLength = 128

// routeTable knows every route's path and methods, to tell a known path asked with
// another method (405, with Allow) from a path that names nothing (404).
type routeTable []routePattern

type routePattern struct {
	segments []string // ":name" matches any one segment
	methods  []string
}

func newRouteTable(routes []*echo.Route) routeTable {
	var t routeTable
	for _, r := range routes {
		if strings.Contains(r.Path, "*") || r.Method == echo.RouteNotFound {
			continue // a group's catch-all, not a route of the API
		}
		segs := strings.Split(strings.Trim(r.Path, "/"), "/")
		i := slices.IndexFunc(t, func(p routePattern) bool { return slices.Equal(p.segments, segs) })
		if i < 0 {
			t = append(t, routePattern{segments: segs})
			i = len(t) - 1
		}
		if !slices.Contains(t[i].methods, r.Method) {
			t[i].methods = append(t[i].methods, r.Method)
		}
	}
	for i := range t {
		slices.Sort(t[i].methods)
	}
	return t
}

// allowed is the methods of the route path names, or nil.
func (t routeTable) allowed(path string) []string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, p := range t {
		if len(p.segments) != len(segs) {
			continue
		}
		match := true
		for i, s := range p.segments {
			if !(strings.HasPrefix(s, ":") && segs[i] != "") && s != segs[i] {
				match = false
				break
			}
		}
		if match {
			return p.methods
		}
	}
	return nil
}

// checkIDs refuses a path parameter or query value longer than MaxIDLength.
func checkIDs(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for i, name := range c.ParamNames() {
			if v := c.ParamValues()[i]; name != "*" && len(v) > MaxIDLength {
				return events.FieldError(events.CodeInvalid, name, "is %d bytes long; ids are at most %d", len(v), MaxIDLength)
			}
		}
		for name, vs := range c.QueryParams() {
			for _, v := range vs {
				if len(v) > 1024 {
					return events.FieldError(events.CodeInvalid, events.ShortenForMessage(name, 64), "is %d bytes long; a query value is at most 1024", len(v))
				}
			}
		}
		return next(c)
	}
}

// methodNotAllowed answers a known path asked with another method 405 with Allow:
// echo's 404 for such a path under a group, and its own 405 elsewhere (which says
// no Allow).
func (s *Server) methodNotAllowed(err error, c echo.Context) error {
	he, ok := err.(*echo.HTTPError)
	if !ok || (he.Code != http.StatusNotFound && he.Code != http.StatusMethodNotAllowed) {
		return err
	}
	methods := s.routes.allowed(c.Request().URL.Path)
	if methods == nil || slices.Contains(methods, c.Request().Method) {
		return err
	}
	c.Response().Header().Set(echo.HeaderAllow, strings.Join(methods, ", "))
	return echo.NewHTTPError(http.StatusMethodNotAllowed, c.Request().Method+" is not a method of this path; it takes "+strings.Join(methods, ", "))
}
