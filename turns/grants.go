package turns

import (
	"context"

	"github.com/turnlog/turnlog/fsm"
)

// Grants lists what people said yes to for the rest of a session (see
// fsm.Engine.Grants).
func (s *Service) Grants(ctx context.Context, session string) ([]fsm.GrantView, error) {
	return s.cfg.Engine.Grants(ctx, session)
}

// RevokeGrant ends a session's grant for the rest of it, as by (see
// fsm.Engine.RevokeGrant): the next call it would have covered asks again.
func (s *Service) RevokeGrant(ctx context.Context, session, grant, by string) (*fsm.GrantView, error) {
	return s.cfg.Engine.RevokeGrant(ctx, session, grant, by)
}
