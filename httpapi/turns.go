package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
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
	var req turnRequest
	raw, err := s.readBody(c)
	if err != nil {
		return err
	}
	if err := decodeRaw(raw, &req); err != nil {
		return err
	}
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	k, err := s.idempotency(c, raw, s.startedFor(c.Param("id")))
	if err != nil {
		return err
	}
	if k.replayed() { // the same request again: the turn it started answers
		if _, err := s.cfg.Reader.Turn(ctx, k.rec.Session, k.rec.Turn); events.IsCode(err, events.CodeNotFound) {
			if wantsStream(c, req) { // a reconnect attaches to the queued input
				return s.streamQueued(c, k.rec.Session, k.rec.Turn)
			}
			return s.queuedAnswer(c, k.rec.Session, k.rec.Turn) // queued, not started yet
		}
		if req.Background {
			return s.accepted(c, k.rec.Session, k.rec.Turn)
		}
		after, _ := strconv.ParseInt(c.Request().Header.Get("Last-Event-ID"), 10, 64)
		return s.answerTurn(c, k.rec.Session, k.rec.Turn, wantsStream(c, req), k.rec.StartSeq, after)
	}
	defer k.finish(ctx)
	if k == nil && req.Input != nil { // a reconnecting stream without a key continues its turn
		if turn, after, ok, err := s.continuedTurn(c, c.Param("id"), *req.Input); err != nil || ok {
			if err != nil {
				return err
			}
			return s.answerTurn(c, c.Param("id"), turn, true, 0, after)
		}
	}
	if req.Input != nil && req.ResumeMap != nil {
		return events.FieldError(events.CodeInvalid, "body", "give either input or resume_map, not both")
	}
	if req.Input == nil && req.ResumeMap == nil {
		return events.FieldError(events.CodeInvalid, "input", "is required (or resume_map to answer a suspended turn)")
	}
	if req.OnBusy != "" && (req.Input == nil || !slices.Contains(fsm.OnBusyModes(), req.OnBusy)) {
		return events.FieldError(events.CodeInvalid, "on_busy", "must be one of %v, with input", fsm.OnBusyModes())
	}
	if req.Background && wantsStream(c, req) {
		return events.FieldError(events.CodeInvalid, "background", "goes without stream: follow the turn at its /stream")
	}
	var answers map[string]fsm.Answer
	if req.ResumeMap != nil {
		var err error
		if answers, err = decodeAnswers(req.ResumeMap); err != nil {
			return err
		}
	}
	var deltas *fsm.DeltaSub
	if wantsStream(c, req) { // subscribe before the turn starts: no delta is missed
		sub, stop := s.cfg.Engine.Deltas(c.Param("id"))
		defer stop()
		deltas = sub
	}
	var started *fsm.StartedTurn
	if answers != nil {
		started, err = s.cfg.Engine.Resume(ctx, c.Param("id"), userOf(c), answers)
	} else {
		startCtx := ctx
		if k != nil {
			startCtx = fsm.WithRequestKey(ctx, k.digest()) // a repeat finds the turn in the log, whatever happens to this process
		}
		started, err = s.cfg.Engine.StartTurn(startCtx, c.Param("id"), *req.Input)
	}
	if err != nil {
		if mode := s.onBusy(sess, req); req.Input != nil && events.IsCode(err, events.CodeConflict) && mode != fsm.OnBusyReject {
			q, qerr := s.cfg.Engine.Enqueue(ctx, c.Param("id"), userOf(c), *req.Input, mode == fsm.OnBusyInterrupt)
			if qerr != nil {
				return qerr
			}
			c.Set(startedTurnKey, q.TurnID)
			if err := k.made(ctx, c.Param("id"), q.TurnID, 0); err != nil {
				return err
			}
			if deltas != nil {
				return s.streamQueued(c, c.Param("id"), q.TurnID)
			}
			return s.queuedAnswer(c, c.Param("id"), q.TurnID)
		}
		return err
	}
	c.Set(startedTurnKey, started.ID)
	if err := k.made(ctx, c.Param("id"), started.ID, started.StartSeq); err != nil {
		return err
	}
	if req.Background {
		return s.accepted(c, c.Param("id"), started.ID)
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

// onBusy is what a turn request does if its session is busy.
func (s *Server) onBusy(sess projection.Session, req turnRequest) string {
	if req.OnBusy != "" {
		return req.OnBusy
	}
	if app, ok := s.cfg.Engine.App(sess.App); ok && app.OnBusy != "" {
		return app.OnBusy
	}
	return fsm.OnBusyReject
}

// streamQueued answers an input that waits in its session's queue and asked for a
// stream: an SSE stream whose first event, queued (no id: it is not an event of the
// log), says where it waits; then the turn, once it starts, as any turn's stream —
// or turn_canceled if the input is taken out before it runs.
func (s *Server) streamQueued(c echo.Context, session, turn string) error {
	ctx := c.Request().Context()
	queue, err := s.cfg.Engine.Queue(ctx, session)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(queue, func(q projection.QueuedInput) bool { return q.Turn == turn })
	if i < 0 { // it left the queue already: it started, or it was dropped
		if _, err := s.cfg.Reader.Turn(ctx, session, turn); err == nil {
			return s.answerTurn(c, session, turn, true, 0, 0)
		}
		return events.Errorf(events.CodeConflict, "the input queued as turn %s was canceled before it ran", turn)
	}
	sub, stop := s.cfg.Engine.Deltas(session)
	defer stop()
	queued := liveEvent{name: "queued", data: map[string]any{"turn_id": turn, "status": "queued", "position": i + 1,
		"location": "/v1/sessions/" + session + "/turns/" + turn}}
	return s.streamTurnFrom(c, turn, queue[i].Seq, []liveEvent{queued}, sub)
}

// queuedAnswer answers an input that waits in its session's queue: 202, its turn's
// resource, its position.
func (s *Server) queuedAnswer(c echo.Context, session, turn string) error {
	queue, err := s.cfg.Engine.Queue(c.Request().Context(), session)
	if err != nil {
		return err
	}
	position := 0
	for i, q := range queue {
		if q.Turn == turn {
			position = i + 1
		}
	}
	if position == 0 { // it left the queue: it started, or it was canceled
		if _, err := s.cfg.Reader.Turn(c.Request().Context(), session, turn); err == nil {
			return s.accepted(c, session, turn)
		}
		return events.Errorf(events.CodeConflict, "the input queued as turn %s was canceled before it ran", turn)
	}
	loc := "/v1/sessions/" + session + "/turns/" + turn
	c.Response().Header().Set(echo.HeaderLocation, loc)
	return c.JSON(http.StatusAccepted, map[string]any{"turn_id": turn, "status": "queued", "position": position, "location": loc})
}

// accepted answers a background turn: 202, and where its resource is.
func (s *Server) accepted(c echo.Context, session, turn string) error {
	loc := "/v1/sessions/" + session + "/turns/" + turn
	c.Response().Header().Set(echo.HeaderLocation, loc)
	return c.JSON(http.StatusAccepted, map[string]any{"turn_id": turn, "status": "running", "location": loc})
}

// decodeAnswers reads resume_map strictly: a tool approval's answer is
// {"confirmed": bool, "rejection_message"?: string, "arguments"?: object}; a guardrail
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
	ctx := c.Request().Context()
	k, err := s.idempotency(c, raw)
	if err != nil {
		return err
	}
	if k.replayed() {
		return s.answerTurn(c, k.rec.Session, k.rec.Turn, false, 0, 0)
	}
	defer k.finish(ctx)
	res, err := s.cfg.Engine.Compact(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	if err := k.made(ctx, c.Param("id"), res.TurnID, 0); err != nil {
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
	ctx := c.Request().Context()
	k, err := s.idempotency(c, raw)
	if err != nil {
		return err
	}
	if k.replayed() { // canceled already: the turn as it is now
		t, err := s.cfg.Reader.Turn(ctx, k.rec.Session, k.rec.Turn)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, t)
	}
	defer k.finish(ctx)
	t, err := s.cfg.Engine.Cancel(ctx, c.Param("id"), c.Param("turn_id"), req.Reason)
	if err != nil {
		return err
	}
	if err := k.made(ctx, c.Param("id"), c.Param("turn_id"), 0); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}
