package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// Metrics is turnlog's set of collectors.
type Metrics struct {
	reg          *prometheus.Registry
	turns        *prometheus.CounterVec
	turnSeconds  *prometheus.HistogramVec
	turnFailures *prometheus.CounterVec
	suspensions  *prometheus.CounterVec
	brokenTurns  prometheus.Counter
	noEvidence   *prometheus.CounterVec
	modelCalls   *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	spendTokens  *prometheus.CounterVec
	spendCost    *prometheus.CounterVec
	budgetHeld   *prometheus.CounterVec
	toolCalls    *prometheus.HistogramVec
	appended     prometheus.Counter
	commits      prometheus.Counter
	batchEvents  prometheus.Histogram
	commitTime   prometheus.Histogram
	sseClients   prometheus.Gauge
	requests     *prometheus.HistogramVec
	conns        connGauges
}

var _ fsm.Observer = (*Metrics)(nil)

// New registers every collector on a new registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_turns_total",
			Help: "Turns that ended, by app and status (completed, failed, canceled); a turn that waited for people counts once, when it ends."}, []string{"app", "status"}),
		turnSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "turnlog_turn_duration_seconds",
			Help:    "Time from a turn's start to its end, by app and status (time waiting for people included).",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 12)}, []string{"app", "status"}),
		turnFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_turn_failures_total",
			Help: "Turns that failed or were canceled, by app and error code."}, []string{"app", "code"}),
		suspensions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_turn_suspensions_total",
			Help: "Times a turn stopped to wait for people, by app."}, []string{"app"}),
		brokenTurns: prometheus.NewCounter(prometheus.CounterOpts{Name: "turnlog_turns_broken_total",
			Help: "Turns the engine could not record on (the store failed); recovered at the next start."}),
		noEvidence: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_answers_without_evidence_total",
			Help: "Answers given in a turn in which no tool ran, of agents with require_evidence, by app, agent and action (sent_back to the model once, or stood)."}, []string{"app", "agent", "action"}),
		modelCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "turnlog_model_call_seconds",
			Help: "Latency of live model calls.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"llm", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_model_tokens_total",
			Help: "Tokens of live model calls, by model and kind (input, output, and of those cached input and reasoning output)."}, []string{"llm", "kind"}),
		spendTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_spend_tokens_total",
			Help: "Tokens live model calls spent, by app, agent, model and kind (input, output)."}, []string{"app", "agent", "llm", "kind"}),
		spendCost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_spend_cost_total",
			Help: "What live model calls cost by the config's price table, by app, agent and model (a model without a price adds nothing)."}, []string{"app", "agent", "llm"}),
		budgetHeld: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "turnlog_budget_reached_total",
			Help: "Times a turn was held at a budget before a model call, by app, agent and scope (turn, session, user_day)."}, []string{"app", "agent", "scope"}),
		toolCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "turnlog_tool_call_seconds",
			Help: "Latency of live tool calls.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"tool", "outcome"}),
		appended: prometheus.NewCounter(prometheus.CounterOpts{Name: "turnlog_events_appended_total",
			Help: "Events appended to the log."}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Name: "turnlog_commits_total",
			Help: "Group commits (transactions) of the event log."}),
		batchEvents: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "turnlog_commit_events",
			Help: "Events per group commit of the log writer.", Buckets: prometheus.ExponentialBuckets(1, 2, 10)}),
		commitTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "turnlog_commit_seconds",
			Help: "Latency of a group commit of the log writer, its fsync included.", Buckets: prometheus.ExponentialBuckets(0.0001, 3, 10)}),
		sseClients: prometheus.NewGauge(prometheus.GaugeOpts{Name: "turnlog_sse_clients",
			Help: "Server-Sent Event streams open now."}),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "turnlog_http_request_seconds",
			Help: "HTTP requests by route and status (a path no route matches is route \"unmatched\").", Buckets: prometheus.DefBuckets}, []string{"method", "route", "status"}),
	}
	m.reg.MustRegister(m.turns, m.turnSeconds, m.turnFailures, m.suspensions, m.brokenTurns, m.noEvidence, m.modelCalls, m.tokens, m.spendTokens, m.spendCost, m.budgetHeld, m.toolCalls,
		m.appended, m.commits, m.batchEvents, m.commitTime, m.sseClients, m.requests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.conns.collectors()...)
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
func (m *Metrics) ModelCalled(c fsm.ModelCall) {
	m.modelCalls.WithLabelValues(c.LLM, outcome(c.Failed)).Observe(c.Took.Seconds())
	m.addTokens(c.LLM, c.Usage)
	if c.Failed {
		return
	}
	m.spendTokens.WithLabelValues(c.App, c.Agent, c.LLM, "input").Add(float64(c.Usage.InputTokens))
	m.spendTokens.WithLabelValues(c.App, c.Agent, c.LLM, "output").Add(float64(c.Usage.OutputTokens))
	m.spendCost.WithLabelValues(c.App, c.Agent, c.LLM).Add(c.Cost)
}

// BudgetReached implements fsm.Observer.
func (m *Metrics) BudgetReached(app, agent, scope string) {
	m.budgetHeld.WithLabelValues(app, agent, scope).Inc()
}

func (m *Metrics) addTokens(llm string, u events.Usage) {
	for kind, n := range map[string]int64{"input": u.InputTokens, "output": u.OutputTokens, "cached": u.CachedTokens, "reasoning": u.ReasoningTokens} {
		if n > 0 {
			m.tokens.WithLabelValues(llm, kind).Add(float64(n))
		}
	}
}

// ToolCalled implements fsm.Observer.
func (m *Metrics) ToolCalled(tool string, took time.Duration, failed bool) {
	m.toolCalls.WithLabelValues(tool, outcome(failed)).Observe(took.Seconds())
}

// TurnEnded implements fsm.Observer.
func (m *Metrics) TurnEnded(e fsm.TurnEnd) {
	if e.Status == fsm.StatusSuspended {
		m.suspensions.WithLabelValues(e.App).Inc()
		return
	}
	m.turns.WithLabelValues(e.App, e.Status).Inc()
	m.turnSeconds.WithLabelValues(e.App, e.Status).Observe(e.Took.Seconds())
	if e.Code != "" {
		m.turnFailures.WithLabelValues(e.App, string(e.Code)).Inc()
	}
}

// TurnBroke implements fsm.Observer.
func (m *Metrics) TurnBroke(fsm.TurnBreak) { m.brokenTurns.Inc() }

// AnswerWithoutEvidence implements fsm.Observer.
func (m *Metrics) AnswerWithoutEvidence(app, agent string, stood bool) {
	action := events.EvidenceSentBack
	if stood {
		action = events.EvidenceStood
	}
	m.noEvidence.WithLabelValues(app, agent, action).Inc()
}

// Committed counts one group commit of n events that took took.
func (m *Metrics) Committed(n int, took time.Duration) {
	m.commits.Inc()
	m.appended.Add(float64(n))
	m.batchEvents.Observe(float64(n))
	m.commitTime.Observe(took.Seconds())
}

// SSEClient moves the open-streams gauge by delta.
func (m *Metrics) SSEClient(delta int) { m.sseClients.Add(float64(delta)) }

// Request records one HTTP request.
func (m *Metrics) Request(method, route string, status int, took time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Observe(took.Seconds())
}
