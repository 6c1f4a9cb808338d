package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

type createSessionRequest struct {
	App      string          `json:"app"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

func (s *Server) createSession(c echo.Context) error {
	var req createSessionRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if req.App == "" {
		return events.FieldError(events.CodeInvalid, "app", "is required")
	}
	sess, err := s.cfg.Engine.CreateSession(c.Request().Context(), req.App, userOf(c), req.Metadata)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, sess)
}

// ownedSession loads a session the caller owns; another user's session is not found.
func (s *Server) ownedSession(c echo.Context) (projection.Session, error) {
	id := c.Param("id")
	sess, err := s.cfg.Reader.Session(c.Request().Context(), id)
	if err != nil {
		return sess, err
	}
	if sess.Owner != userOf(c) {
		return sess, events.Errorf(events.CodeNotFound, "session %s not found", id)
	}
	return sess, nil
}

type turnRequest struct {
	Input     *string                    `json:"input,omitempty"`
	ResumeMap map[string]json.RawMessage `json:"resume_map,omitempty"`
	Stream    bool                       `json:"stream,omitempty"`
}

type turnResponse struct {
	TurnID         string           `json:"turn_id"`
	Status         string           `json:"status"`
	Output         string           `json:"output"`
	Items          []events.Item    `json:"items"`
	Interrupts     []any            `json:"interrupts"`
	SuspendPayload any              `json:"suspend_payload"`
	Error          *fsm.ResultError `json:"error"`
	Usage          events.Usage     `json:"usage"`
	Agent          string           `json:"agent"`
}

func (s *Server) runTurn(c echo.Context) error {
	var req turnRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	switch {
	case req.Input != nil && req.ResumeMap != nil:
		return events.FieldError(events.CodeInvalid, "body", "give either input or resume_map, not both")
	case req.ResumeMap != nil:
		return events.FieldError(events.CodeConflict, "resume_map", "the session has no suspended turn to resume")
	case req.Input == nil:
		return events.FieldError(events.CodeInvalid, "input", "is required")
	}
	if req.Stream || strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream") {
		return events.FieldError(events.CodeInvalid, "stream", "streaming is not available in this version")
	}
	res, err := s.cfg.Engine.RunTurn(c.Request().Context(), c.Param("id"), *req.Input)
	if err != nil {
		return err
	}
	items := res.Items
	if items == nil {
		items = []events.Item{}
	}
	return c.JSON(http.StatusOK, turnResponse{TurnID: res.TurnID, Status: res.Status, Output: res.Output, Items: items,
		Interrupts: []any{}, Error: res.Error, Usage: res.Usage, Agent: res.Agent})
}

func (s *Server) history(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	items, err := s.cfg.Reader.History(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if items == nil {
		items = []events.Item{}
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items})
}

func (s *Server) events(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	after := int64(0)
	if v := c.QueryParam("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return events.FieldError(events.CodeInvalid, "after", "must be a non-negative integer, got %q", v)
		}
		after = n
	}
	evs, err := s.cfg.Reader.Events(c.Request().Context(), c.Param("id"), after)
	if err != nil {
		return err
	}
	if evs == nil {
		evs = []events.Event{}
	}
	return c.JSON(http.StatusOK, map[string]any{"events": evs})
}
