package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// spend: GET /v1/sessions/{id}/spend — what the session's model calls spent (by
// agent: in the session, its latest turn, and its owner's day in the app) and each
// budget of its app against it.
func (s *Server) spend(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	out, err := s.cfg.Engine.Spend(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
