package inspector

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// revertTurn puts back every file a turn changed ("Revert this turn").
func (s *Server) revertTurn(c echo.Context) error {
	return s.revert(c, fsm.RevertRequest{Turn: c.Param("turn")})
}

// revertTo puts back every file the turns after one changed ("Back to here").
func (s *Server) revertTo(c echo.Context) error {
	turn := c.FormValue("to_turn")
	if turn == "" {
		return events.FieldError(events.CodeInvalid, "to_turn", "names no turn to go back to")
	}
	return s.revert(c, fsm.RevertRequest{ToTurn: turn})
}

// revert carries out req for the signed-in user, as the API's revert routes do; a
// revert refused for its conflicts shows them, with a form that forces it.
func (s *Server) revert(c echo.Context, req fsm.RevertRequest) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	req.Session, req.By, req.Force = sess.ID, signInOf(c).User, c.FormValue("force") == "true"
	key := s.formKey(c, map[string]any{"turn": req.Turn, "to_turn": req.ToTurn, "force": req.Force})
	_, err = s.cfg.Turns.Revert(c.Request().Context(), key, req)
	var rc *fsm.RevertConflictError
	if errors.As(err, &rc) {
		return s.render(c, http.StatusConflict, "conflict", "Not reverted", map[string]any{"Session": sess, "Conflicts": rc.Conflicts,
			"Action": c.Request().URL.Path, "ToTurn": req.ToTurn})
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/sessions/"+sess.ID+"?done=reverted")
}
