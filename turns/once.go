package turns

import (
	"context"
	"encoding/json"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// Once runs act unless an earlier request with k's key ran it; then it returns what
// that request made (Repeated) without acting. A request act refuses gives its key
// up, so it may be sent again.
func (s *Service) Once(ctx context.Context, k Key, act func(ctx context.Context) (Made, error)) (Made, error) {
	c, err := s.claim(ctx, k, nil)
	if err != nil {
		return Made{}, err
	}
	if c.repeated() {
		return c.madeBefore(), nil
	}
	defer c.finish(ctx)
	m, err := act(ctx)
	if err != nil {
		return Made{}, err
	}
	return m, c.made(ctx, m)
}

// CreateSession creates a session of app for owner, once per key.
func (s *Service) CreateSession(ctx context.Context, k Key, app string, metadata json.RawMessage) (projection.Session, error) {
	return s.createOnce(ctx, k, func(ctx context.Context) (projection.Session, error) {
		return s.cfg.Engine.CreateSession(ctx, app, k.Owner, metadata)
	})
}

// Branch branches source at a point into a new session of k's owner, once per key.
func (s *Service) Branch(ctx context.Context, k Key, source string, at fsm.BranchPoint, metadata json.RawMessage) (projection.Session, error) {
	return s.createOnce(ctx, k, func(ctx context.Context) (projection.Session, error) {
		return s.cfg.Engine.Branch(ctx, source, k.Owner, at, metadata)
	})
}

func (s *Service) createOnce(ctx context.Context, k Key, create func(context.Context) (projection.Session, error)) (projection.Session, error) {
	var sess projection.Session
	m, err := s.Once(ctx, k, func(ctx context.Context) (Made, error) {
		var err error
		sess, err = create(ctx)
		return Made{Session: sess.ID}, err
	})
	if err != nil || !m.Repeated {
		return sess, err
	}
	return s.cfg.Reader.Session(ctx, m.Session)
}

// Cancel cancels a turn of session (see fsm.Engine.Cancel), once per key: a repeat
// answers with the turn as it is now.
func (s *Service) Cancel(ctx context.Context, k Key, session, turn, reason string) (projection.Turn, error) {
	var t projection.Turn
	m, err := s.Once(ctx, k, func(ctx context.Context) (Made, error) {
		var err error
		t, err = s.cfg.Engine.Cancel(ctx, session, turn, reason)
		return Made{Session: session, Turn: turn}, err
	})
	if err != nil || !m.Repeated {
		return t, err
	}
	return s.cfg.Reader.Turn(ctx, m.Session, m.Turn)
}

// Compact runs a compaction turn of session (see fsm.Engine.Compact), once per key:
// a repeat answers with that turn's result once it has ended.
func (s *Service) Compact(ctx context.Context, k Key, session string) (*fsm.Result, error) {
	var res *fsm.Result
	m, err := s.Once(ctx, k, func(ctx context.Context) (Made, error) {
		var err error
		if res, err = s.cfg.Engine.Compact(ctx, session); err != nil {
			return Made{}, err
		}
		return Made{Session: session, Turn: res.TurnID}, nil
	})
	if err != nil || !m.Repeated {
		return res, err
	}
	return s.Await(ctx, m.Session, m.Turn)
}

// Revert reverts a session's files (see fsm.Engine.Revert), once per key: a repeat
// answers with the revert as it was recorded.
func (s *Service) Revert(ctx context.Context, k Key, req fsm.RevertRequest) (*fsm.Reverted, error) {
	var rev *fsm.Reverted
	m, err := s.Once(ctx, k, func(ctx context.Context) (Made, error) {
		var err error
		if rev, err = s.cfg.Engine.Revert(ctx, req); err != nil {
			return Made{}, err
		}
		return Made{Session: req.Session, StartSeq: rev.Seq}, nil
	})
	if err != nil || !m.Repeated {
		return rev, err
	}
	evs, err := s.cfg.Reader.Events(ctx, m.Session, m.StartSeq-1)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 || evs[0].Type != events.TypeWorkspaceReverted {
		return nil, events.Errorf(events.CodeInternal, "the revert this key made is not at seq %d of %s", m.StartSeq, m.Session)
	}
	return fsm.RevertedOf(evs[0])
}
