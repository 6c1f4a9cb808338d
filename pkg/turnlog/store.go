package turnlog

import (
	"context"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/delivery/webhook"
	"github.com/turnlog/turnlog/adapters/observability/metrics"
	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/memory"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/inspector"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/turns"
)

// Store is the log's store as turnlog uses it: a SQLite file (sqlite.Store, one
// node) or a PostgreSQL database (postgres.Store, chosen by a postgres:// DB).
type Store interface {
	fsm.Store
	httpapi.Reader
	turns.Keys
	httpapi.Erasures
	inspector.Reader
	inspector.SignIns
	memory.Store
	webhook.Outbox
	Deliveries(ctx context.Context, f projection.DeliveryFilter) ([]projection.Delivery, error)
	Delivery(ctx context.Context, id string) (projection.Delivery, error)
	Redeliver(ctx context.Context, id string, now time.Time) (projection.Delivery, error)
	RouteWebhooks(r projection.WebhookRouter)
	Ready(ctx context.Context) error
	Close() error
}

var (
	_ Store = (*sqlite.Store)(nil)
	_ Store = (*postgres.Store)(nil)
)

// IsPostgres says whether db names a PostgreSQL database rather than a SQLite file.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// openStore opens the store opts.DB names, with its gauges for the metrics, and
// what several nodes share of it (nil: one node, a SQLite file).
func openStore(ctx context.Context, opts Options, m *metrics.Metrics, onCommit func(int, time.Duration)) (Store, fsm.Cluster, error) {
	if IsPostgres(opts.DB) {
		s, err := postgres.Open(ctx, opts.DB, postgres.Options{Clock: opts.Clock, OnCommit: onCommit})
		if err != nil {
			return nil, nil, err
		}
		m.WatchStore(func(ctx context.Context) (metrics.StoreStats, error) {
			st, err := s.Stats(ctx)
			return metrics.StoreStats{RunningTurns: st.RunningTurns, WaitingTurns: st.WaitingTurns, QueuedInputs: st.QueuedInputs,
				OutboxPending: st.OutboxPending, DBBytes: st.DBBytes}, err
		})
		return s, s, nil
	}
	s, err := sqlite.Open(ctx, opts.DB, sqlite.Options{Synchronous: opts.Synchronous, CheckpointPages: opts.CheckpointPages, Clock: opts.Clock, OnCommit: onCommit})
	if err != nil {
		return nil, nil, err
	}
	m.WatchStore(func(ctx context.Context) (metrics.StoreStats, error) {
		st, err := s.Stats(ctx)
		return metrics.StoreStats{RunningTurns: st.RunningTurns, WaitingTurns: st.WaitingTurns, QueuedInputs: st.QueuedInputs,
			OutboxPending: st.OutboxPending, DBBytes: st.DBBytes, WALBytes: st.WALBytes}, err
	})
	return s, nil, nil
}
