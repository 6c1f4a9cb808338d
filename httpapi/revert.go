package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// revertRequest is the body of the three revert routes (each optional but force).
type revertRequest struct {
	ToTurn string `json:"to_turn,omitempty"`
	Force  bool   `json:"force,omitempty"`
}

// revertTurn: POST /v1/sessions/{id}/turns/{turn_id}/revert — the turn's files put
// back as they were before it.
func (s *Server) revertTurn(c echo.Context) error {
	return s.revert(c, func(req *fsm.RevertRequest, _ revertRequest) { req.Turn = c.Param("turn_id") })
}

// revertSession: POST /v1/sessions/{id}/revert {"to_turn"} — every turn after
// to_turn undone, newest first, as one change.
func (s *Server) revertSession(c echo.Context) error {
	return s.revert(c, func(req *fsm.RevertRequest, body revertRequest) { req.ToTurn = body.ToTurn })
}

// revertRevert: POST /v1/sessions/{id}/reverts/{revert_id}/revert — a revert undone.
func (s *Server) revertRevert(c echo.Context) error {
	return s.revert(c, func(req *fsm.RevertRequest, _ revertRequest) { req.Revert = c.Param("revert_id") })
}

func (s *Server) revert(c echo.Context, name func(*fsm.RevertRequest, revertRequest)) error {
	var body revertRequest
	raw, err := s.readBody(c)
	if err != nil {
		return err
	}
	if len(raw) != 0 {
		if err := decodeRaw(raw, &body); err != nil {
			return err
		}
	}
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	req := fsm.RevertRequest{Session: c.Param("id"), By: userOf(c), Force: body.Force}
	name(&req, body)
	rev, err := s.turns.Revert(c.Request().Context(), keyOf(c, raw), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rev)
}

// turnFiles: GET /v1/sessions/{id}/turns/{turn_id}/files — what each of the turn's
// calls changed in its workspace, as its FilesChanged recorded it.
func (s *Server) turnFiles(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	ctx, session, turn := c.Request().Context(), c.Param("id"), c.Param("turn_id")
	t, err := s.cfg.Reader.Turn(ctx, session, turn)
	if err != nil {
		return err
	}
	evs, err := s.cfg.Reader.Events(ctx, session, t.StartSeq-1)
	if err != nil {
		return err
	}
	calls := []*events.FilesChanged{}
	for _, ev := range evs {
		if ev.Turn != turn || ev.Type != events.TypeFilesChanged {
			continue
		}
		fc, err := events.DecodeAs[*events.FilesChanged](ev)
		if err != nil {
			return err
		}
		calls = append(calls, fc)
	}
	return c.JSON(http.StatusOK, map[string]any{"calls": calls})
}
