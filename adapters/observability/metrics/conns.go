package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// connSource is what the HTTP server reports of its connections.
type connSource struct {
	open    func() int
	refused func() int64
}

// connGauges export the HTTP server's open and refused connections, read from the
// server last given to WatchConnections (none: 0).
type connGauges struct {
	src atomic.Pointer[connSource]
}

func (g *connGauges) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "turnlog_http_connections",
			Help: "HTTP connections open now."}, func() float64 {
			if s := g.src.Load(); s != nil {
				return float64(s.open())
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "turnlog_http_connections_refused_total",
			Help: "HTTP connections answered 503 overloaded (or closed unanswered) past the server's connection caps."}, func() float64 {
			if s := g.src.Load(); s != nil {
				return float64(s.refused())
			}
			return 0
		}),
	}
}

// WatchConnections reports the connections of the HTTP server that serves now.
func (m *Metrics) WatchConnections(open func() int, refused func() int64) {
	m.conns.src.Store(&connSource{open: open, refused: refused})
}
