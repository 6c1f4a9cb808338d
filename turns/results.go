package turns

import (
	"context"
	"slices"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// ResultOf is a turn's result as the log has it once the turn ended (waiting for
// people counts as ended); ended is false while it runs, and the result then holds
// only its ID and agent.
func (s *Service) ResultOf(ctx context.Context, session, turn string) (*fsm.Result, bool, error) {
	t, err := s.cfg.Reader.Turn(ctx, session, turn)
	if err != nil {
		return nil, false, err
	}
	out := &fsm.Result{Session: session, TurnID: t.ID, Items: []events.Item{}, Agent: t.EndAgent}
	if out.Agent == "" {
		out.Agent = t.Agent
	}
	if t.Status == projection.TurnRunning {
		return out, false, nil
	}
	evs, err := s.cfg.Reader.Events(ctx, session, t.StartSeq-1)
	if err != nil {
		return nil, false, err
	}
	var last *events.Event
	for i := range evs {
		if evs[i].Turn != turn {
			continue
		}
		switch evs[i].Type {
		case events.TypeTurnCommitted, events.TypeTurnSuspended, events.TypeTurnFailed, events.TypeTurnCanceled:
			last = &evs[i]
		}
	}
	if last == nil {
		return out, false, nil
	}
	p, err := events.Decode(*last)
	if err != nil {
		return nil, false, err
	}
	switch e := p.(type) {
	case *events.TurnCommitted:
		out.Status, out.Output, out.Items, out.Usage, out.Agent = fsm.StatusCompleted, e.Output, e.Items, e.Usage, e.Agent
	case *events.TurnFailed:
		out.Status, out.Usage = fsm.StatusFailed, e.Usage
		out.Error = &fsm.ResultError{Code: e.ErrorCode, Message: e.Message, Path: e.Path}
	case *events.TurnCanceled:
		out.Status, out.Usage = fsm.StatusCanceled, e.Usage
		out.Error = &fsm.ResultError{Code: events.CodeCanceled, Message: e.Reason}
	case *events.TurnSuspended:
		out.Status, out.Usage = fsm.StatusSuspended, e.Usage
		pending, err := s.cfg.Reader.PendingInterrupts(ctx, session)
		if err != nil {
			return nil, false, err
		}
		app := ""
		for _, i := range pending {
			if i.Turn != turn {
				continue
			}
			in := fsm.Interrupt{ID: i.ID, Kind: i.Kind, Path: i.Path, CallID: i.CallID, Tool: i.Tool,
				Arguments: i.Arguments, Reason: i.Reason, Rule: i.Rule, Level: i.Level, Resources: i.Resources, Alternative: i.Alternative}
			if i.Kind == events.InterruptToolApproval && i.Rule != "" {
				if app == "" {
					sess, err := s.cfg.Reader.Session(ctx, session)
					if err != nil {
						return nil, false, err
					}
					app = sess.App
				}
				in.Grant, _ = s.cfg.Engine.SuggestedGrant(app, i.Path, i.Tool, i.Arguments)
			}
			out.Interrupts = append(out.Interrupts, in)
		}
	}
	if out.Items == nil {
		out.Items = []events.Item{}
	}
	return out, true, nil
}

// Await returns a turn's result once it has ended, as the log has it, and once the
// run that ended it has let its session go (so the next request finds it free).
func (s *Service) Await(ctx context.Context, session, turn string) (*fsm.Result, error) {
	wake, stop := s.cfg.Reader.Watch(session)
	defer stop()
	for {
		res, ended, err := s.ResultOf(ctx, session, turn)
		if events.IsCode(err, events.CodeNotFound) && s.IsQueued(ctx, session, turn) {
			err = nil // it waits in the session's queue
		}
		if err != nil {
			return nil, err
		}
		if ended {
			s.Settle(ctx, session, turn)
			return res, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// IsQueued says whether turn is an input waiting in session's queue.
func (s *Service) IsQueued(ctx context.Context, session, turn string) bool {
	queue, err := s.cfg.Engine.Queue(ctx, session)
	return err == nil && slices.ContainsFunc(queue, func(q projection.QueuedInput) bool { return q.Turn == turn })
}

// Settle waits until the run that ended turn has let its session go (see
// fsm.Engine.Settled), or ctx ends.
func (s *Service) Settle(ctx context.Context, session, turn string) {
	t, err := s.cfg.Reader.Turn(ctx, session, turn)
	if err != nil || t.EndSeq == 0 {
		return // suspended (or unknown): no run of it that ended is left to wait for
	}
	s.cfg.Engine.Settled(ctx, session, turn, t.EndSeq)
}
