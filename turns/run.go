package turns

import (
	"context"
	"slices"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// Run carries out a turn request: a repeat of a keyed request is answered with the
// turn its first request started; input with After (and no key) continues the turn
// After belongs to; otherwise the turn starts (or resumes) — and input for a busy
// session is refused or queued, as its on_busy says. The caller closes the Outcome;
// with an error there is none.
func (s *Service) Run(ctx context.Context, r Request) (*Outcome, error) {
	c, err := s.claim(ctx, r.key(), s.startedFor(r.Session))
	if err != nil {
		return nil, err
	}
	if c.repeated() {
		return s.repeat(ctx, r, c.madeBefore())
	}
	defer c.finish(ctx)
	if c == nil && r.Input != nil && r.After != nil {
		return s.continued(ctx, r)
	}
	// A repeat is answered as its first request was (however it asks for the answer);
	// the request that acts must ask for one thing, one way.
	if err := r.check(); err != nil {
		return nil, err
	}
	out := &Outcome{Kind: Started, Session: r.Session, Background: r.Background, svc: s}
	if r.Stream {
		out.subscribe()
	}
	started, err := s.begin(ctx, r, c)
	if err == nil {
		out.Started, out.Turn, out.Start = started, started.ID, started.StartSeq
		if err := c.made(ctx, Made{Session: r.Session, Turn: started.ID, StartSeq: started.StartSeq}); err != nil {
			out.Close() // the turn runs on; this request answers with the error
			return nil, err
		}
		return out, nil
	}
	mode, merr := s.onBusy(ctx, r)
	if r.Input == nil || !events.IsCode(err, events.CodeConflict) || merr != nil || mode == fsm.OnBusyReject {
		out.Close()
		return nil, err
	}
	q, err := s.cfg.Engine.Enqueue(ctx, r.Session, r.User, *r.Input, mode == fsm.OnBusyInterrupt)
	if err != nil {
		out.Close()
		return nil, err
	}
	out.Kind, out.Turn = Queued, q.TurnID
	if err := c.made(ctx, Made{Session: r.Session, Turn: q.TurnID}); err != nil {
		out.Close()
		return nil, err
	}
	if err := s.locateQueued(ctx, out); err != nil {
		out.Close()
		return nil, err
	}
	return out, nil
}

// begin starts the turn (recording the key's digest in its TurnStarted, so a repeat
// finds it in the log whatever happens to this process) or resumes it. A conflict
// from the run that has just ended — the log says no turn runs, its run has not let
// the session go yet — is waited out, and the request made once more.
func (s *Service) begin(ctx context.Context, r Request, c *claim) (*fsm.StartedTurn, error) {
	act := func() (*fsm.StartedTurn, error) {
		if r.Answers != nil {
			return s.cfg.Engine.Resume(ctx, r.Session, r.User, r.Answers)
		}
		startCtx := ctx
		if d := c.digest(); d != "" {
			startCtx = fsm.WithRequestKey(ctx, d)
		}
		return s.cfg.Engine.StartTurn(startCtx, r.Session, *r.Input)
	}
	t, err := act()
	if !events.IsCode(err, events.CodeConflict) {
		return t, err
	}
	last, lerr := s.cfg.Reader.LastTurn(ctx, r.Session)
	seq, serr := s.cfg.Reader.LastSeq(ctx, r.Session)
	if lerr != nil || serr != nil || last.Status == projection.TurnRunning {
		return nil, err // a turn does run: the conflict stands
	}
	if s.cfg.Engine.Settled(ctx, r.Session, last.ID, seq) != nil {
		return nil, err
	}
	return act()
}

// onBusy is what a request's input does if its session is busy.
func (s *Service) onBusy(ctx context.Context, r Request) (string, error) {
	if r.OnBusy != "" {
		return r.OnBusy, nil
	}
	sess, err := s.cfg.Reader.Session(ctx, r.Session)
	if err != nil {
		return "", err
	}
	if app, ok := s.cfg.Engine.App(sess.App); ok && app.OnBusy != "" {
		return app.OnBusy, nil
	}
	return fsm.OnBusyReject, nil
}

// repeat answers a repeated request with what its first request made: the turn it
// started (or resumed), or the input it queued.
func (s *Service) repeat(ctx context.Context, r Request, m Made) (*Outcome, error) {
	out := &Outcome{Kind: Repeated, Session: m.Session, Turn: m.Turn, Start: m.StartSeq, After: r.after(), Background: r.Background, svc: s}
	if _, err := s.cfg.Reader.Turn(ctx, m.Session, m.Turn); err == nil {
		return out, nil
	} else if !events.IsCode(err, events.CodeNotFound) {
		return nil, err
	}
	out.Kind = Queued // not in the log yet: its input was queued
	if r.Stream {
		out.subscribe()
	}
	if err := s.locateQueued(ctx, out); err != nil {
		out.Close()
		return nil, err
	}
	return out, nil
}

// locateQueued finds where out's queued input waits; Position 0 when it has left
// the queue and started. An input taken out of the queue before it ran is a
// conflict.
func (s *Service) locateQueued(ctx context.Context, out *Outcome) error {
	queue, err := s.cfg.Engine.Queue(ctx, out.Session)
	if err != nil {
		return err
	}
	if i := slices.IndexFunc(queue, func(q projection.QueuedInput) bool { return q.Turn == out.Turn }); i >= 0 {
		out.Position, out.QueueSeq = i+1, queue[i].Seq
		return nil
	}
	if _, err := s.cfg.Reader.Turn(ctx, out.Session, out.Turn); err == nil {
		out.Position = 0
		return nil
	}
	return events.Errorf(events.CodeConflict, "the input queued as turn %s was canceled before it ran", out.Turn)
}

// continued is the turn a request with After (and no key) continues: the one that
// seq belongs to, when it is running or is the session's newest, and was started
// with the same input. A request that names another turn is refused: it never starts
// a new one.
func (s *Service) continued(ctx context.Context, r Request) (*Outcome, error) {
	seq := *r.After
	turns, err := s.cfg.Reader.Turns(ctx, r.Session)
	if err != nil {
		return nil, err
	}
	for i, t := range turns {
		if t.StartSeq <= seq && (t.EndSeq == 0 || seq <= t.EndSeq) {
			if (t.Status == projection.TurnRunning || i == len(turns)-1) && t.Input == *r.Input {
				return &Outcome{Kind: Continued, Session: r.Session, Turn: t.ID, After: seq, svc: s}, nil
			}
			break
		}
	}
	return nil, events.Errorf(events.CodeConflict, "Last-Event-ID %d belongs to no turn this request can continue (a new turn is started without it)", seq)
}
