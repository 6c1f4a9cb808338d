package inspector

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// grantSuggester is an engine that knows what an approval may be granted for the
// rest of its session: the pattern the page offers.
type grantSuggester interface {
	SuggestedGrant(app, path, tool string, args []byte) (string, bool)
}

// revokeGrant ends a grant of the session for the rest of it, as the signed-in user,
// as the API's DELETE …/grants/{grant_id} does, and goes back to the session page.
func (s *Server) revokeGrant(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	if _, err := s.cfg.Turns.RevokeGrant(c.Request().Context(), sess.ID, c.Param("grant"), signInOf(c).User); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/sessions/"+sess.ID+"?done=revoked#grants-h")
}
