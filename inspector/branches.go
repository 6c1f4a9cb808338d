package inspector

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// branch makes a new session from a committed turn end of this one ("branch here")
// and opens it.
func (s *Server) branch(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	turn := c.FormValue("turn")
	if turn == "" {
		return events.FieldError(events.CodeInvalid, "turn", "names no turn to branch at")
	}
	br, err := s.cfg.Turns.Branch(c.Request().Context(), s.formKey(c, map[string]string{"turn": turn}), sess.ID, fsm.BranchPoint{Turn: turn}, nil)
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/ui/sessions/"+br.ID+"?done=branched")
}

// auditPage is the session's audit as a table: who did what, what was decided, by
// which rule, the files and commands.
func (s *Server) auditPage(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	rows, err := s.cfg.Reader.Audit(c.Request().Context(), sess.ID)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, "audit", "Audit of "+sess.ID, map[string]any{"Session": sess, "Rows": rows})
}

// export downloads the session as a fixture: one event a line.
func (s *Server) export(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	evs, err := fsm.Recording(c.Request().Context(), s.cfg.Reader, sess.ID)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/x-ndjson")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="`+sess.ID+`.events.jsonl"`)
	c.Response().WriteHeader(http.StatusOK)
	return events.WriteJSONL(c.Response(), evs)
}
