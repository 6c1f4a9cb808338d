package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

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

func wantsStream(c echo.Context, req turnRequest) bool {
	return req.Stream || strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream")
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
		for id, answer := range req.ResumeMap {
			if len(answer) == 0 || answer[0] != '{' {
				return events.FieldError(events.CodeInvalid, "resume_map."+id, "must be an object such as {\"confirmed\": true}")
			}
		}
		return events.FieldError(events.CodeConflict, "resume_map", "the session has no suspended turn to resume")
	case req.Input == nil:
		return events.FieldError(events.CodeInvalid, "input", "is required")
	}
	var deltas *fsm.DeltaSub
	if wantsStream(c, req) { // subscribe before the turn starts: no delta is missed
		sub, stop := s.cfg.Engine.Deltas(c.Param("id"))
		defer stop()
		deltas = sub
	}
	started, err := s.cfg.Engine.StartTurn(c.Request().Context(), c.Param("id"), *req.Input)
	if err != nil {
		return err
	}
	if deltas != nil {
		return s.streamTurn(c, started, deltas)
	}
	res, err := started.Wait()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, responseOf(res))
}

func responseOf(res *fsm.Result) turnResponse {
	items := res.Items
	if items == nil {
		items = []events.Item{}
	}
	return turnResponse{TurnID: res.TurnID, Status: res.Status, Output: res.Output, Items: items,
		Interrupts: []any{}, Error: res.Error, Usage: res.Usage, Agent: res.Agent}
}

func (s *Server) listTurns(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	turns, err := s.cfg.Reader.Turns(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	if turns == nil {
		turns = []projection.Turn{}
	}
	return c.JSON(http.StatusOK, map[string]any{"turns": turns})
}

type cancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

func (s *Server) cancelTurn(c echo.Context) error {
	var req cancelRequest
	if c.Request().ContentLength != 0 {
		if err := decodeBody(c, &req); err != nil {
			return err
		}
	}
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	t, err := s.cfg.Engine.Cancel(c.Request().Context(), c.Param("id"), c.Param("turn_id"), req.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}
