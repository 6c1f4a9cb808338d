package turns

import (
	"context"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// adoptWindow is how many of a session's newest turns a repeat looks through for the
// one its first request started: that request claimed the key moments before.
const adoptWindow = 20

// startedFor finds, among the newest turns of session, the one a request with the
// key started (its TurnStarted carries the key's digest), reading the log once.
func (s *Service) startedFor(session string) adopter {
	return func(ctx context.Context, rec projection.IdempotencyRecord) (Made, bool, error) {
		turns, err := s.cfg.Reader.Turns(ctx, session)
		if err != nil || len(turns) == 0 {
			if err == nil || events.IsCode(err, events.CodeNotFound) {
				return Made{}, false, nil
			}
			return Made{}, false, err
		}
		from := turns[max(len(turns)-adoptWindow, 0)].StartSeq - 1
		evs, err := s.cfg.Reader.Events(ctx, session, from)
		if err != nil {
			return Made{}, false, err
		}
		digest := requestKeyDigest(rec.Owner, rec.Key, rec.CreatedAt)
		for _, ev := range evs {
			if ev.Type != events.TypeTurnStarted {
				continue
			}
			if st, err := events.DecodeAs[*events.TurnStarted](ev); err == nil && st.RequestKey == digest {
				return Made{Session: session, Turn: ev.Turn, StartSeq: ev.Seq}, true, nil
			}
		}
		return Made{}, false, nil
	}
}
