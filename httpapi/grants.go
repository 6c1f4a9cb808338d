package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// grants: GET /v1/sessions/{id}/grants — what people said yes to for the rest of the
// session (a branch's include those its source held at the branch point), who and
// when, and each revocation.
func (s *Server) grants(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	list, err := s.turns.Grants(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"grants": list})
}

// revokeGrant: DELETE /v1/sessions/{id}/grants/{grant_id} — the grant ends for the
// rest of the session, recorded with who revoked it; the next call it would have
// covered asks a person again. 409 when it was revoked already or a turn is running.
func (s *Server) revokeGrant(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	g, err := s.turns.RevokeGrant(c.Request().Context(), c.Param("id"), c.Param("grant_id"), userOf(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, g)
}
