package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/turns"
)

type turnRequest struct {
	Input     *string                    `json:"input,omitempty"`
	ResumeMap map[string]json.RawMessage `json:"resume_map,omitempty"`
	Stream    bool                       `json:"stream,omitempty"`
	// Background answers 202 as soon as the turn has started; the turn resource
	// (Location) and its stream follow it.
	Background bool `json:"background,omitempty"`
	// OnBusy says what this input does if the session is busy: reject, enqueue or
	// interrupt (default: the app's on_busy, else reject).
	OnBusy string `json:"on_busy,omitempty"`
}

type turnResponse struct {
	TurnID         string           `json:"turn_id"`
	Status         string           `json:"status"`
	Output         string           `json:"output"`
	Items          []events.Item    `json:"items"`
	Interrupts     []fsm.Interrupt  `json:"interrupts"`
	SuspendPayload *fsm.Interrupt   `json:"suspend_payload"`
	Error          *fsm.ResultError `json:"error"`
	Usage          events.Usage     `json:"usage"`
	Agent          string           `json:"agent"`
}

func wantsStream(c echo.Context, req turnRequest) bool {
	return req.Stream || strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream")
}

func (s *Server) runTurn(c echo.Context) error {
	var body turnRequest
	raw, err := s.readBody(c)
	if err != nil {
		return err
	}
	if err := decodeRaw(raw, &body); err != nil {
		return err
	}
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	req, err := turnRequestOf(c, raw, body)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if isAdmin(c) { // an admin key may extend budgets kept for operators
		ctx = fsm.AsOperator(ctx)
	}
	out, err := s.turns.Run(ctx, req)
	if err != nil {
		return err
	}
	defer out.Close()
	c.Set(startedTurnKey, out.Turn)
	return s.answerOutcome(c, out, req.Stream)
}

// turnRequestOf is the turns service's request of a POST …/turns.
func turnRequestOf(c echo.Context, raw []byte, body turnRequest) (turns.Request, error) {
	req := turns.Request{Session: c.Param("id"), User: userOf(c), Input: body.Input, OnBusy: body.OnBusy,
		Background: body.Background, Stream: wantsStream(c, body), Key: keyOf(c, raw)}
	if body.ResumeMap != nil {
		answers, err := decodeAnswers(body.ResumeMap)
		if err != nil {
			return req, err
		}
		req.Answers = answers
	}
	if h := c.Request().Header.Get("Last-Event-ID"); h != "" {
		seq, err := strconv.ParseInt(h, 10, 64)
		switch {
		case err == nil && seq >= 0:
			req.After = &seq
		case req.Key.Value == "" && req.Input != nil: // it would name the turn to continue
			return req, events.FieldError(events.CodeInvalid, "Last-Event-ID", "must be an event id (a seq), got %q", events.ShortenForMessage(h, 32))
		}
	}
	return req, nil
}

// answerOutcome answers a turn request with what it came to: the turn's stream or
// its result, or 202 for a turn in the background or an input in the queue.
func (s *Server) answerOutcome(c echo.Context, out *turns.Outcome, stream bool) error {
	switch {
	case out.Kind == turns.Queued && out.Position > 0 && stream:
		return s.streamQueued(c, out)
	case out.Kind == turns.Queued && out.Position > 0:
		return queuedAnswer(c, out)
	case out.Kind == turns.Queued && stream: // it left the queue and started
		return s.answerTurn(c, out.Session, out.Turn, true, 0, 0)
	case out.Kind == turns.Queued || out.Background:
		return accepted(c, out.Session, out.Turn)
	case out.Kind == turns.Started && stream:
		return s.streamTurn(c, out.Started, out.Deltas)
	case out.Kind == turns.Started:
		res, err := out.Started.Wait()
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, responseOf(res))
	case out.Kind == turns.Continued:
		return s.answerTurn(c, out.Session, out.Turn, true, 0, out.After)
	}
	return s.answerTurn(c, out.Session, out.Turn, stream, out.Start, out.After) // repeated
}

// streamQueued answers an input that waits in its session's queue and asked for a
// stream: an SSE stream whose first event, queued (no id: it is not an event of the
// log), says where it waits; then the turn, once it starts, as any turn's stream —
// or turn_canceled if the input is taken out before it runs.
func (s *Server) streamQueued(c echo.Context, out *turns.Outcome) error {
	queued := liveEvent{name: "queued", data: map[string]any{"turn_id": out.Turn, "status": "queued", "position": out.Position,
		"location": turnLocation(out.Session, out.Turn)}}
	return s.streamTurnFrom(c, out.Turn, out.QueueSeq, []liveEvent{queued}, out.Deltas)
}

// queuedAnswer answers an input that waits in its session's queue: 202, its turn's
// resource, its position.
func queuedAnswer(c echo.Context, out *turns.Outcome) error {
	loc := turnLocation(out.Session, out.Turn)
	c.Response().Header().Set(echo.HeaderLocation, loc)
	return c.JSON(http.StatusAccepted, map[string]any{"turn_id": out.Turn, "status": "queued", "position": out.Position, "location": loc})
}

// accepted answers a background turn: 202, and where its resource is.
func accepted(c echo.Context, session, turn string) error {
	loc := turnLocation(session, turn)
	c.Response().Header().Set(echo.HeaderLocation, loc)
	return c.JSON(http.StatusAccepted, map[string]any{"turn_id": turn, "status": "running", "location": loc})
}

func turnLocation(session, turn string) string { return "/v1/sessions/" + session + "/turns/" + turn }

// decodeAnswers reads resume_map strictly: a tool approval's answer is
// {"confirmed": bool, "rejection_message"?: string, "arguments"?: object, "grant"?:
// {"command"?: string, "prefix"?: string}}; a guardrail
// review's is {"decision": "approve"|"reject", "reviewer_notes"?: string}.
func decodeAnswers(raw map[string]json.RawMessage) (map[string]fsm.Answer, error) {
	out := make(map[string]fsm.Answer, len(raw))
	for id, body := range raw {
		var a fsm.Answer
		field := "resume_map." + events.ShownName(id)
		if err := events.CheckStrict(body, &a); err != nil {
			var te *events.Error
			if errors.As(err, &te) {
				te.Field = field + "." + te.Field
			}
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, typeError(te, field)
			}
			return nil, events.FieldError(events.CodeInvalid, field, "must be an object such as {\"confirmed\": true}: %s", cleanJSONError(err))
		}
		out[id] = a
	}
	return out, nil
}

func responseOf(res *fsm.Result) turnResponse {
	items := res.Items
	if items == nil {
		items = []events.Item{}
	}
	out := turnResponse{TurnID: res.TurnID, Status: res.Status, Output: res.Output, Items: items,
		Interrupts: []fsm.Interrupt{}, Error: res.Error, Usage: res.Usage, Agent: res.Agent}
	if len(res.Interrupts) > 0 {
		out.Interrupts = res.Interrupts
		first := res.Interrupts[0]
		out.SuspendPayload = &first
	}
	return out
}

func (s *Server) listTurns(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	var only projection.TurnStatus
	if v := c.QueryParam("status"); v != "" {
		st, ok := projection.TurnStatusOf(v)
		if !ok {
			return events.FieldError(events.CodeInvalid, "status", "must be running, suspended, completed, failed or canceled, got %q", events.ShortenForMessage(v, 32))
		}
		only = st
	}
	turns, err := s.cfg.Reader.Turns(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	out := []projection.Turn{}
	for _, t := range turns {
		if only == "" || t.Status == only {
			out = append(out, t)
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"turns": out})
}

// compact runs a compaction turn: the session's agent summarises the committed
// conversation not summarised yet. The response is the turn's, its one item the
// summary.
func (s *Server) compact(c echo.Context) error {
	raw, err := s.readBody(c)
	if err != nil {
		return err
	}
	if len(raw) != 0 {
		var empty struct{}
		if err := decodeRaw(raw, &empty); err != nil {
			return err
		}
	}
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	res, err := s.turns.Compact(c.Request().Context(), keyOf(c, raw), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, responseOf(res))
}

type cancelRequest struct {
	Reason string `json:"reason,omitempty"`
}

func (s *Server) cancelTurn(c echo.Context) error {
	var req cancelRequest
	raw, err := s.readBody(c)
	if err != nil {
		return err
	}
	if len(raw) != 0 {
		if err := decodeRaw(raw, &req); err != nil {
			return err
		}
	}
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	t, err := s.turns.Cancel(c.Request().Context(), keyOf(c, raw), c.Param("id"), c.Param("turn_id"), req.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}
