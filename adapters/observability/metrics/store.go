package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StoreStats is what the log's store holds at a scrape.
type StoreStats struct {
	RunningTurns, WaitingTurns, QueuedInputs int64
	OutboxPending                            int64
	DBBytes, WALBytes                        int64
}

// storeCollector reads the store's stats at each scrape: gauges that stay true
// across restarts, because they count what the log holds.
type storeCollector struct {
	stats                                         func(context.Context) (StoreStats, error)
	up, running, waiting, queued, outbox, db, wal *prometheus.Desc
}

// WatchStore adds gauges read from the store at each scrape: running, waiting and
// queued turns, pending webhook deliveries, and the database and WAL sizes.
func (m *Metrics) WatchStore(stats func(context.Context) (StoreStats, error)) {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	m.reg.MustRegister(&storeCollector{stats: stats,
		up:      d("turnlog_store_up", "1 when the store answered the last scrape's reads, else 0 (and the gauges below are left out)."),
		running: d("turnlog_turns_running", "Turns running now."),
		waiting: d("turnlog_turns_waiting", "Turns waiting for people's answers (suspended)."),
		queued:  d("turnlog_inputs_queued", "Inputs queued behind a busy session's turn."),
		outbox:  d("turnlog_webhook_outbox_pending", "Webhook deliveries not yet delivered nor dead."),
		db:      d("turnlog_db_bytes", "Size of the SQLite database file."),
		wal:     d("turnlog_wal_bytes", "Size of the SQLite write-ahead log."),
	})
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.running, c.waiting, c.queued, c.outbox, c.db, c.wal} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := c.stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for d, v := range map[*prometheus.Desc]int64{c.running: st.RunningTurns, c.waiting: st.WaitingTurns, c.queued: st.QueuedInputs,
		c.outbox: st.OutboxPending, c.db: st.DBBytes, c.wal: st.WALBytes} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
}
