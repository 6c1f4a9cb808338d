package inspector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
)

// liveStep is what the live stream sends of an event: its place and its title, never
// a body (a held or stopped answer is not shown here).
type liveStep struct {
	Seq    int64  `json:"seq"`
	Turn   string `json:"turn"`
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Detail string `json:"detail,omitempty"`
}

// live streams a session's events after ?after= as they are committed (SSE, under
// /ui/ with the page's cookie): a "step" for each, and "end" when a turn ends or
// waits for people, so the page reloads to show it whole.
func (s *Server) live(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	from, err := strconv.ParseInt(c.QueryParam("after"), 10, 64)
	if err != nil || from < 0 {
		return events.FieldError(events.CodeInvalid, "after", "must be a seq, got %q", c.QueryParam("after"))
	}
	wake, stop := s.cfg.Reader.Watch(sess.ID) // before the first read: no commit is missed
	defer stop()
	ctx := c.Request().Context()
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.Flush()
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		evs, err := s.cfg.Reader.Events(ctx, sess.ID, from)
		if err != nil {
			return nil
		}
		for _, ev := range evs {
			from = ev.Seq
			st := stepOf(ev, ev.At)
			data, _ := json.Marshal(liveStep{Seq: ev.Seq, Turn: ev.Turn, Kind: ev.Type, Title: st.Title, Detail: st.Detail})
			if _, err := fmt.Fprintf(w, "id: %d\nevent: step\ndata: %s\n\n", ev.Seq, data); err != nil {
				return nil
			}
			switch ev.Type {
			case events.TypeTurnCommitted, events.TypeTurnFailed, events.TypeTurnCanceled, events.TypeTurnSuspended:
				fmt.Fprintf(w, "event: end\ndata: {}\n\n")
			}
		}
		w.Flush()
		select {
		case <-wake:
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
			w.Flush()
		case <-ctx.Done():
			return nil
		}
	}
}
