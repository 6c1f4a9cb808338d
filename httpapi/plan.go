package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// plan: GET /v1/sessions/{id}/plan — what the agent thinks it is doing: the latest
// update_plan of the session (or of the sessions it was branched from, before the
// branch point); {"plan": null} when none was set.
func (s *Server) plan(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	p, err := s.cfg.Reader.Plan(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"plan": p})
}
