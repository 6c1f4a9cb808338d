package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

const userKey = "turnlog.user"

// authenticate maps a bearer API key to its user; in dev mode a request without a key
// acts as "dev".
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		token, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || token == "" {
			if s.cfg.Dev && h == "" {
				c.Set(userKey, "dev")
				return next(c)
			}
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="turnlog"`)
			return echo.NewHTTPError(http.StatusUnauthorized, "a bearer API key is required")
		}
		for key, user := range s.cfg.Keys {
			if subtle.ConstantTimeCompare([]byte(key), []byte(token)) == 1 {
				c.Set(userKey, user)
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
