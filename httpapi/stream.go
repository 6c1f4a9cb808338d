package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// sse writes Server-Sent Events; every event's id is the log seq it reflects, so a
// client that reconnects with Last-Event-ID resumes without gaps or duplicates.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

// comment sends an SSE comment line, which clients ignore.
func (s *sse) comment(text string) error {
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

func startSSE(c echo.Context) (*sse, error) {
	f, ok := c.Response().Writer.(http.Flusher)
	if !ok {
		return nil, events.Errorf(events.CodeInternal, "streaming is not supported by this connection")
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Response().WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: c.Response(), f: f}, nil
}

// sendLive writes an event that is not in the log: it has no id, so a client that
// reconnects resumes after the last logged event it saw.
func (s *sse) sendLive(name string, data any) error {
	body, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, body); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

func (s *sse) send(seq int64, name string, data any) error {
	body, err := json.Marshal(data)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "id: %d\nevent: %s\ndata: %s\n\n", seq, name, body); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

// after reads where a stream starts: Last-Event-ID (a reconnecting client) wins over
// the after query parameter.
func after(c echo.Context) (int64, error) {
	v, field := c.Request().Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, field = c.QueryParam("after"), "after"
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, events.FieldError(events.CodeInvalid, field, "must be a non-negative integer, got %q", v)
	}
	return n, nil
}

func (s *Server) events(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	from, err := after(c)
	if err != nil {
		return err
	}
	if strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream") {
		return s.follow(c, from, nil, nil, nil, func(ev events.Event) (string, any, bool) { return ev.Type, ev, false })
	}
	evs, err := s.cfg.Reader.Events(c.Request().Context(), c.Param("id"), from)
	if err != nil {
		return err
	}
	if evs == nil {
		evs = []events.Event{}
	}
	return c.JSON(http.StatusOK, map[string]any{"events": evs})
}

// follow streams a session's events after seq `from` as they are committed. render
// names and shapes each event ("" skips it) and says whether the stream ends there.
// live, when given, carries transient text deltas, sent without an id (they are not in
// the log). It returns when the client goes away or the server stops.
func (s *Server) follow(c echo.Context, from int64, prelude []liveEvent, live <-chan fsm.Delta, onLive func(fsm.Delta),
	render func(events.Event) (string, any, bool)) error {
	session := c.Param("id")
	wake, stop := s.cfg.Reader.Watch(session) // before the first read: no commit is missed
	defer stop()
	out, err := startSSE(c)
	if err != nil {
		return err
	}
	s.meter.SSEClient(1)
	defer s.meter.SSEClient(-1)
	for _, ev := range prelude {
		if err := out.sendLive(ev.name, ev.data); err != nil {
			return nil
		}
	}
	ctx := c.Request().Context()
	keepAlive := time.NewTicker(sseKeepAlive)
	defer keepAlive.Stop()
	// A delta waits until the events it was computed after are sent (fsm.Delta.After):
	// an answer's text never precedes the tool results it depends on.
	var queued []fsm.Delta
	var gate textGate // an answer's text waits until no guardrail stops it
	flush := func() error {
		for len(queued) > 0 && queued[0].After <= from {
			d := queued[0]
			queued = queued[1:]
			onLive(d)
			if err := out.sendLive("text_delta", map[string]any{"turn_id": d.Turn, "path": d.Path, "text": d.Text, "live": true}); err != nil {
				return err
			}
		}
		return nil
	}
	sendLive := func(d fsm.Delta) error {
		queued = append(queued, d)
		return flush()
	}
	for {
		// A model call publishes all its deltas before its ModelCalled commits: send
		// those waiting first, so the log never overtakes the live text.
	drain:
		for {
			select {
			case d := <-live:
				if err := sendLive(d); err != nil {
					return nil
				}
			default:
				break drain
			}
		}
		evs, err := s.cfg.Reader.Events(ctx, session, from)
		if err != nil {
			return nil // the client is gone or the store failed; the stream just ends
		}
		// Pieces published while the log was read precede what they are part of in it:
		// take them now, so each goes out before the events after its After.
	late:
		for {
			select {
			case d := <-live:
				queued = append(queued, d)
			default:
				break late
			}
		}
		for _, ev := range evs {
			if err := flush(); err != nil { // text computed after the events so far
				return nil
			}
			from = ev.Seq
			name, data, last := render(ev)
			if last && ev.Type == events.TypeTurnSuspended && resumedLater(evs, ev) {
				last = false // the turn went on: its stream does too
			}
			if last && ev.Turn != "" { // the client's next request must not find the session busy with it
				s.settledAt(ctx, session, ev.Turn, ev.Seq)
			}
			for _, o := range withPlan(ev, gate.pass(ev, name, data)) {
				if err := out.send(o.seq, o.name, o.data); err != nil {
					return nil
				}
			}
			if last {
				return nil
			}
		}
		if err := flush(); err != nil {
			return nil
		}
	wait:
		select {
		case <-wake:
		case d := <-live:
			if err := sendLive(d); err != nil {
				return nil
			}
			goto wait
		case <-keepAlive.C:
			if err := out.comment("keep-alive"); err != nil {
				return nil // a client that does not read is cut by the write deadline
			}
			goto wait
		case <-ctx.Done():
			return nil
		case <-s.stopping:
			return nil
		}
	}
}

// sseKeepAlive is how often a quiet stream sends a comment: proxies and clients see
// it live, and one that stopped reading is found by the write deadline.
const sseKeepAlive = 15 * time.Second

// resumedLater says whether the turn that suspended at ev was resumed later in evs.
func resumedLater(evs []events.Event, ev events.Event) bool {
	for _, later := range evs {
		if later.Seq > ev.Seq && later.Turn == ev.Turn && later.Type == events.TypeTurnResumed {
			return true
		}
	}
	return false
}

// streamTurn streams one turn as it runs, from its TurnStarted to its end, with the
// event names of the API: the model's text live as it arrives, then everything the
// log records. The turn goes on if the client leaves; it can follow the rest on
// /events with Last-Event-ID.
func (s *Server) streamTurn(c echo.Context, t *fsm.StartedTurn, deltas *fsm.DeltaSub) error {
	return s.streamTurnFrom(c, t.ID, t.StartSeq-1, s.reopenedSubagents(c.Request().Context(), c.Param("id"), t), deltas)
}

// streamTurnFrom streams turn's events after seq from, with its live text.
func (s *Server) streamTurnFrom(c echo.Context, turn string, from int64, prelude []liveEvent, deltas *fsm.DeltaSub) error {
	streamed := map[string]int{} // paths whose text went out live from its first piece: the next index
	// One turn runs on a session at a time, so the session's deltas are this turn's.
	return s.follow(c, from, prelude, deltas.C, func(d fsm.Delta) {
		if next, ok := streamed[d.Path]; (ok && next == d.Index) || (!ok && d.Index == 0) {
			streamed[d.Path] = d.Index + 1
		} else {
			streamed[d.Path] = -1 // a piece was missed: the recorded answer is sent too
		}
	},
		func(ev events.Event) (string, any, bool) {
			if ev.Type == events.TypeQueuedInputDropped && gjson.GetBytes(ev.Data, "turn_id").String() == turn {
				// A queued input taken out before it ran: its stream ends as a canceled turn's.
				return "turn_canceled", map[string]any{"turn_id": turn, "status": fsm.StatusCanceled,
					"error": map[string]string{"code": string(events.CodeCanceled), "message": gjson.GetBytes(ev.Data, "reason").String()}}, true
			}
			if ev.Turn != turn {
				return "", nil, false
			}
			name, data, last := turnEvent(ev)
			// Text that went out live is not sent again from the log, unless pieces
			// were lost on the way.
			if name == "text_delta" && streamed[ev.Path] > 0 && !deltas.Dropped() {
				return "", nil, false
			}
			return name, data, last
		})
}

// liveEvent is a stream event that is not a log event of its own (it has no id).
type liveEvent struct {
	name string
	data any
}

// reopenedSubagents: a resumed turn's stream starts after the answers, so for every
// agent tool the turn was inside when it suspended, it first sends that tool's
// subagent_start again (marked reopened, without an id); what the nested agent said
// before the suspension is not sent again.
func (s *Server) reopenedSubagents(ctx context.Context, session string, t *fsm.StartedTurn) []liveEvent {
	turn, err := s.cfg.Reader.LastTurn(ctx, session)
	if err != nil || turn.ID != t.ID || turn.StartSeq >= t.StartSeq {
		return nil // a fresh turn
	}
	evs, err := s.cfg.Reader.Events(ctx, session, turn.StartSeq-1)
	if err != nil {
		return nil
	}
	var open []events.Event
	ended := map[string]bool{}
	for _, ev := range evs {
		if ev.Seq >= t.StartSeq {
			break
		}
		switch ev.Type {
		case events.TypeToolScheduled:
			if gjson.GetBytes(ev.Data, "agent").String() != "" {
				open = append(open, ev)
			}
		case events.TypeToolResulted:
			ended[ev.Path] = true
		}
	}
	var out []liveEvent
	for _, ev := range open {
		if ended[ev.Path] {
			continue
		}
		name, data, _ := turnEvent(ev)
		data.(map[string]any)["reopened"] = true
		out = append(out, liveEvent{name, data})
	}
	return out
}

// turnEvent maps a log event to a turn-stream event: its name, its data, and whether
// it ends the turn.
func turnEvent(ev events.Event) (string, any, bool) {
	d := gjson.ParseBytes(ev.Data)
	base := map[string]any{"turn_id": ev.Turn}
	with := func(kv ...any) map[string]any {
		for i := 0; i+1 < len(kv); i += 2 {
			base[kv[i].(string)] = kv[i+1]
		}
		return base
	}
	switch ev.Type {
	case events.TypeTurnStarted:
		return "turn_started", with("input", d.Get("input").String(), "agent", d.Get("agent").String()), false
	case events.TypeModelCalled:
		if text := d.Get("response.text").String(); text != "" {
			return "text_delta", with("agent", d.Get("agent").String(), "path", ev.Path, "text", text), false
		}
	case events.TypeToolScheduled:
		if agent := d.Get("agent").String(); agent != "" {
			return "subagent_start", with("call_id", d.Get("call_id").String(), "tool", d.Get("tool").String(), "agent", agent,
				"arguments", json.RawMessage(d.Get("arguments").Raw), "path", ev.Path), false
		}
		return "tool_call", with("call_id", d.Get("call_id").String(), "tool", d.Get("tool").String(),
			"arguments", json.RawMessage(d.Get("arguments").Raw), "path", ev.Path), false
	case events.TypeToolResulted:
		if agent := d.Get("agent").String(); agent != "" {
			return "subagent_end", with("call_id", d.Get("call_id").String(), "tool", d.Get("tool").String(), "agent", agent,
				"output", d.Get("output").String(), "is_error", d.Get("is_error").Bool(), "path", ev.Path), false
		}
		if note := d.Get("note").String(); note != "" {
			base["note"] = note // a reviewer edited the call
		}
		return "tool_result", with("call_id", d.Get("call_id").String(), "tool", d.Get("tool").String(),
			"output", d.Get("output").String(), "is_error", d.Get("is_error").Bool(), "path", ev.Path), false
	case events.TypeApprovalRequested:
		for _, k := range []string{"rule", "level", "alternative"} { // when the tool policy asks
			if v := d.Get(k).String(); v != "" {
				base[k] = v
			}
		}
		if r := d.Get("resources"); r.IsArray() {
			base["resources"] = json.RawMessage(r.Raw)
		}
		return "interrupt", with("id", d.Get("interrupt_id").String(), "kind", d.Get("kind").String(), "path", ev.Path,
			"call_id", d.Get("call_id").String(), "tool", d.Get("tool").String(), "arguments", json.RawMessage(d.Get("arguments").Raw),
			"reason", d.Get("reason").String()), false
	case events.TypeReviewRequested:
		return "interrupt", with("id", d.Get("interrupt_id").String(), "kind", d.Get("kind").String(), "path", ev.Path,
			"rule", d.Get("rule").String(), "response", json.RawMessage(d.Get("response").Raw), "reason", d.Get("reason").String()), false
	case events.TypeHandoffOccurred:
		return "handoff", with("from", d.Get("from").String(), "to", d.Get("to").String(), "call_id", d.Get("call_id").String(),
			"path", ev.Path), false
	case events.TypeTurnSuspended:
		return "turn_suspended", with("status", fsm.StatusSuspended, "interrupts", json.RawMessage(d.Get("interrupts").Raw),
			"usage", json.RawMessage(d.Get("usage").Raw)), true
	case events.TypeTurnCommitted:
		return "turn_committed", with("status", fsm.StatusCompleted, "output", d.Get("output").String(),
			"agent", d.Get("agent").String(), "items", json.RawMessage(d.Get("items").Raw), "usage", json.RawMessage(d.Get("usage").Raw)), true
	case events.TypeTurnFailed:
		failure := map[string]string{"code": d.Get("error_code").String(), "message": d.Get("message").String()}
		if p := d.Get("path").String(); p != "" {
			failure["path"] = p
		}
		return "turn_failed", with("status", fsm.StatusFailed, "usage", json.RawMessage(d.Get("usage").Raw), "error", failure), true
	case events.TypeTurnCanceled:
		return "turn_canceled", with("status", fsm.StatusCanceled, "usage", json.RawMessage(d.Get("usage").Raw),
			"error", map[string]string{"code": string(events.CodeCanceled), "message": d.Get("reason").String()}), true
	}
	return "", nil, false
}
