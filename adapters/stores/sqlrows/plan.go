package sqlrows

import (
	"context"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// LatestPlan is a session's plan: its own latest update_plan result (latest reads a
// session's, up to a seq, through the plan index), else the one it brought from the
// sessions it was branched from, up to each branch point (nil: none was ever set).
func LatestPlan(ctx context.Context, session string, latest func(ctx context.Context, session string, upto int64) ([]events.Event, error),
	sessionOf func(ctx context.Context, id string) (projection.Session, error)) (*projection.Plan, error) {
	id, upto := session, int64(0)
	for id != "" {
		evs, err := latest(ctx, id, upto)
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 {
			p, err := projection.PlanOf(evs[0])
			return &p, err
		}
		s, err := sessionOf(ctx, id)
		if err != nil {
			return nil, err
		}
		id, upto = s.ParentID, s.ParentSeq
	}
	return nil, nil
}
