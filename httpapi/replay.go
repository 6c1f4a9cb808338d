package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// answerTurn answers a request that continues a turn already started — a repeated
// Idempotency-Key, a stream's Last-Event-ID, the turn's /stream — without starting
// another: as a stream of the turn from the log after `after` (and not before start,
// where the request's part of the turn began: a resume's; 0 is the turn's start), or
// as JSON once the turn has ended.
func (s *Server) answerTurn(c echo.Context, session, turn string, stream bool, start, after int64) error {
	ctx := c.Request().Context()
	t, err := s.cfg.Reader.Turn(ctx, session, turn)
	if err != nil {
		return err
	}
	if start <= 0 {
		start = t.StartSeq
	}
	from := max(after, start-1)
	if stream {
		if t.Status != projection.TurnRunning {
			return s.replayTurnEvents(c, session, turn, from)
		}
		sub, stop := s.cfg.Engine.Deltas(session)
		defer stop()
		if evs, err := s.cfg.Reader.Events(ctx, session, start-1); err == nil && len(evs) > 0 {
			from = min(from, evs[len(evs)-1].Seq) // an id beyond the log is where the log is
		}
		return s.streamTurnFrom(c, t.ID, from, nil, sub)
	}
	ctx, cancel := s.whileServing(ctx)
	defer cancel()
	res, err := s.turns.Await(ctx, session, turn)
	if err != nil {
		select {
		case <-s.stopping:
			return echo.NewHTTPError(http.StatusServiceUnavailable, "the server is stopping; ask again")
		default:
			return err
		}
	}
	return c.JSON(http.StatusOK, responseOf(res))
}

// settledAt waits until the run of turn that wrote its end at seq end has let the
// session go, or the request or the server ends.
func (s *Server) settledAt(ctx context.Context, session, turn string, end int64) {
	ctx, cancel := s.whileServing(ctx)
	defer cancel()
	s.cfg.Engine.Settled(ctx, session, turn, end)
}

// whileServing is ctx, ended too when the server stops.
func (s *Server) whileServing(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// replayTurnEvents streams what the log holds of a turn that is not running, after
// from, and ends: nothing more will come.
func (s *Server) replayTurnEvents(c echo.Context, session, turn string, from int64) error {
	evs, err := s.cfg.Reader.Events(c.Request().Context(), session, from)
	if err != nil {
		return err
	}
	out, err := startSSE(c)
	if err != nil {
		return err
	}
	var gate textGate
	for _, ev := range evs {
		if ev.Turn != turn {
			continue
		}
		name, data, last := turnEvent(ev)
		if last && ev.Type == events.TypeTurnSuspended && resumedLater(evs, ev) {
			last = false // it was resumed: what came after is part of it
		}
		if last {
			s.settledAt(c.Request().Context(), session, turn, ev.Seq)
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
	return nil
}

// maxWait caps how long GET …/turns/{turn_id}?wait= holds a request.
const maxWait = 60 * time.Second

// getTurn is the turn resource: the turn's response as the log has it (status
// running while it runs); ?wait=30s holds the answer until the turn ends or the wait
// is over.
func (s *Server) getTurn(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	session, turn := c.Param("id"), c.Param("turn_id")
	var wait time.Duration
	if raw := c.QueryParam("wait"); raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil || d < 0 {
			return events.FieldError(events.CodeInvalid, "wait", "must be a duration such as 30s, got %q", raw)
		}
		wait = min(d, maxWait)
	}
	ctx := c.Request().Context()
	wake, stop := s.cfg.Reader.Watch(session)
	defer stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		res, ended, err := s.turns.ResultOf(ctx, session, turn)
		status := "running"
		if events.IsCode(err, events.CodeNotFound) {
			if s.turns.IsQueued(ctx, session, turn) {
				err, status = nil, "queued" // it waits in the session's queue
			} else {
				// It may have left the queue and started between the two reads.
				res, ended, err = s.turns.ResultOf(ctx, session, turn)
			}
		}
		if err != nil {
			return err
		}
		if ended || wait == 0 {
			if !ended {
				return c.JSON(http.StatusOK, turnResponse{TurnID: turn, Status: status, Items: []events.Item{}, Interrupts: []fsm.Interrupt{}})
			}
			s.turns.Settle(ctx, session, turn) // the client's next request must not find the session busy with it
			return c.JSON(http.StatusOK, responseOf(res))
		}
		select {
		case <-wake:
		case <-timer.C:
			wait = 0
		case <-ctx.Done():
			return ctx.Err()
		case <-s.stopping:
			wait = 0
		}
	}
}

// followTurn streams one turn from the log — from its start, or after Last-Event-ID —
// with its live text while it runs, ending with the turn's end.
func (s *Server) followTurn(c echo.Context) error {
	if _, err := s.ownedSession(c); err != nil {
		return err
	}
	after := int64(0)
	if raw := c.Request().Header.Get("Last-Event-ID"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			return events.FieldError(events.CodeInvalid, "Last-Event-ID", "must be an event id (a seq), got %q", raw)
		}
		after = n
	}
	return s.answerTurn(c, c.Param("id"), c.Param("turn_id"), true, 0, after)
}
