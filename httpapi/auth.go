package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

const (
	userKey  = "turnlog.user"
	adminKey = "turnlog.admin"
)

// authenticate maps a bearer API key to its user; in dev mode a request without a key
// acts as "dev".
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		token, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || token == "" {
			if s.cfg.Dev && h == "" {
				c.Set(userKey, "dev")
				c.Set(adminKey, len(s.cfg.Keys) == 0) // with keys too, the admin role is a key's
				return next(c)
			}
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="turnlog"`)
			return echo.NewHTTPError(http.StatusUnauthorized, "a bearer API key is required")
		}
		for key, user := range s.cfg.Keys {
			if subtle.ConstantTimeCompare([]byte(key), []byte(token)) == 1 {
				c.Set(userKey, user)
				c.Set(adminKey, s.cfg.AdminKeys[key])
				return next(c)
			}
		}
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="turnlog", error="invalid_token"`)
		return echo.NewHTTPError(http.StatusUnauthorized, "unknown API key")
	}
}

func userOf(c echo.Context) string {
	u, _ := c.Get(userKey).(string)
	return u
}

// isAdmin says whether the request's key carries the admin role.
func isAdmin(c echo.Context) bool {
	admin, _ := c.Get(adminKey).(bool)
	return admin
}

// requireAdmin lets only a key with the admin role through.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !isAdmin(c) {
			return echo.NewHTTPError(http.StatusForbidden, "this route needs an API key with the admin role")
		}
		return next(c)
	}
}
