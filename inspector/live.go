package inspector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// liveStep is what the live stream sends of an event: its place and its title, never
// a body (a held or stopped answer is not shown here).
type liveStep struct {
	Seq    int64  `json:"seq"`
	Turn   string `json:"turn"`
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Detail string `json:"detail,omitempty"`
}

// liveText is a piece of a model's answer as it arrives (fsm.Delta). The engine
// publishes none for an answer that output guardrails or the guardrail policy must
// pass first, so what shows here is what people may see.
type liveText struct {
	Turn  string `json:"turn"`
	Path  string `json:"path"`
	Index int    `json:"index"`
	Text  string `json:"text"`
}

// live streams a session's events after ?after= as they are committed (SSE, under
// /ui/ with the page's cookie): a "step" for each, "text" for each piece of an answer
// as the model sends it, and "end" (with its seq) when a turn ends or waits for
// people, so the page reloads to show it whole.
func (s *Server) live(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	from, err := strconv.ParseInt(c.QueryParam("after"), 10, 64)
	if err != nil || from < 0 {
		return events.FieldError(events.CodeInvalid, "after", "must be a seq, got %q", c.QueryParam("after"))
	}
	if v := c.Request().Header.Get("Last-Event-ID"); v != "" { // a reconnect: on from what it had
		if last, err := strconv.ParseInt(v, 10, 64); err == nil && last > from {
			from = last
		}
	}
	// Both before the first read: no commit and no piece after it is missed.
	wake, stop := s.cfg.Reader.Watch(sess.ID)
	defer stop()
	sub, unsubscribe := s.cfg.Engine.Deltas(sess.ID)
	defer unsubscribe()
	text := sub.C
	ctx := c.Request().Context()
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.Flush()
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	send := func(name string, v any) error {
		data, _ := json.Marshal(v)
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		return err
	}
	// The sign-in is checked again at each wake and keep-alive: a stream ends soon
	// after its sign-out, its expiry or its key's removal.
	stillSignedIn := func() bool {
		if s.cfg.Dev {
			return true
		}
		ck, err := c.Cookie(cookieName)
		if err != nil {
			return false
		}
		_, err = s.liveSignIn(ctx, ck.Value)
		return err == nil
	}
	// A piece of an answer waits until the events it was computed after are sent
	// (fsm.Delta.After): text never precedes the tool results it depends on, and the
	// pieces published before their ModelCalled committed go out before it.
	var queued []fsm.Delta
	sendText := func() error {
		for len(queued) > 0 && queued[0].After <= from {
			d := queued[0]
			queued = queued[1:]
			if err := send("text", liveText{Turn: d.Turn, Path: d.Path, Index: d.Index, Text: d.Text}); err != nil {
				return err
			}
		}
		return nil
	}
	take := func() { // every piece published so far
		for {
			select {
			case d := <-text:
				queued = append(queued, d)
			default:
				return
			}
		}
	}
	for {
		take()
		evs, err := s.cfg.Reader.Events(ctx, sess.ID, from)
		if err != nil {
			return nil
		}
		// Checked after the read: what was committed after a sign-out is read only
		// after it, so it is never sent.
		if !stillSignedIn() {
			send("signed-out", struct{}{})
			w.Flush()
			return nil
		}
		take() // published while the log was read: each precedes what it is part of
		for _, ev := range evs {
			if sendText() != nil {
				return nil
			}
			from = ev.Seq
			st := stepOf(ev, ev.At)
			if send("step", liveStep{Seq: ev.Seq, Turn: ev.Turn, Path: ev.Path, Kind: ev.Type, Title: st.Title, Detail: st.Detail}) != nil {
				return nil
			}
			switch ev.Type {
			case events.TypeTurnCommitted, events.TypeTurnFailed, events.TypeTurnCanceled, events.TypeTurnSuspended:
				// The page reloads on "end", and its next form must not find the
				// session still held by the run that just wrote this.
				s.cfg.Engine.Settled(ctx, sess.ID, ev.Turn, ev.Seq)
				send("end", struct {
					Seq int64 `json:"seq"`
				}{ev.Seq})
			}
			// The id a reconnecting EventSource sends back (Last-Event-ID): it goes
			// on after this event, showing none twice.
			if _, err := fmt.Fprintf(w, "id: %d\n\n", ev.Seq); err != nil {
				return nil
			}
		}
		if sendText() != nil {
			return nil
		}
		w.Flush()
	wait:
		for {
			select {
			case <-wake:
				break wait
			case d := <-text:
				queued = append(queued, d)
				if d.After > from {
					break wait // the events it follows are committed: read them first
				}
				if sendText() != nil {
					return nil
				}
				w.Flush()
			case <-keepAlive.C:
				if !stillSignedIn() {
					send("signed-out", struct{}{})
					w.Flush()
					return nil
				}
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
					return nil
				}
				w.Flush()
			case <-ctx.Done():
				return nil
			case <-s.stopping:
				return nil
			}
		}
	}
}
