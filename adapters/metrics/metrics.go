package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/turnlog/turnlog/fsm"
)

// Metrics is turnlog's set of collectors.
type Metrics struct {
	reg        *prometheus.Registry
	turns      *prometheus.CounterVec
	modelCalls *prometheus.HistogramVec
	toolCalls  *prometheus.HistogramVec
	appended   prometheus.Counter
	commits    prometheus.Counter
	sseClients prometheus.Gauge
	requests   *prometheus.HistogramVec
}

var _ fsm.Observer = (*Metrics)(nil)

// New registers every collector on a new registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_turns_total",
			Help: "Turns that ended, by status (completed, failed, canceled)."}, []string{"status"}),
		modelCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "turnlog_model_call_seconds",
			Help: "Latency of live model calls.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"llm", "outcome"}),
		toolCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "turnlog_tool_call_seconds",
			Help: "Latency of live tool calls.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"tool", "outcome"}),
		appended: prometheus.NewCounter(prometheus.CounterOpts{Name: "turnlog_events_appended_total",
			Help: "Events appended to the log."}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Name: "turnlog_commits_total",
			Help: "Group commits (transactions) of the event log."}),
		sseClients: prometheus.NewGauge(prometheus.GaugeOpts{Name: "turnlog_sse_clients",
			Help: "Server-Sent Event streams open now."}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "turnlog_http_request_seconds",
			Help: "HTTP requests by route and status.", Buckets: prometheus.DefBuckets}, []string{"method", "route", "status"}),
	}
	m.reg.MustRegister(m.turns, m.modelCalls, m.toolCalls, m.appended, m.commits, m.sseClients, m.requests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

func outcome(failed bool) string {
	if failed {
		return "error"
	}
	return "ok"
}

// ModelCalled implements fsm.Observer.
func (m *Metrics) ModelCalled(llm string, took time.Duration, failed bool) {
	m.modelCalls.WithLabelValues(llm, outcome(failed)).Observe(took.Seconds())
}

// ToolCalled implements fsm.Observer.
func (m *Metrics) ToolCalled(tool string, took time.Duration, failed bool) {
	m.toolCalls.WithLabelValues(tool, outcome(failed)).Observe(took.Seconds())
}

// TurnEnded implements fsm.Observer.
func (m *Metrics) TurnEnded(status string) { m.turns.WithLabelValues(status).Inc() }

// Committed counts one group commit of n events.
func (m *Metrics) Committed(n int) {
	m.commits.Inc()
	m.appended.Add(float64(n))
}

// SSEClient moves the open-streams gauge by delta.
func (m *Metrics) SSEClient(delta int) { m.sseClients.Add(float64(delta)) }

// Request records one HTTP request.
func (m *Metrics) Request(method, route string, status int, took time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Observe(took.Seconds())
}
