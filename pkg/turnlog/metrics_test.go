package turnlog_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

const opsConfig = `apps:
  ops:
    start_agent: main
    on_busy: enqueue
    llms:
      m:
        provider: scripted
        rules:
          - {when: {after_tool: "*"}, reply: "done"}
          - {when: {input: '^hello'}, reply: "hi"}
          - {when: {input: '^slow'}, tools: [{name: slow, arguments: '{}'}]}
          - {when: {input: '^refund'}, tools: [{name: refund, arguments: '{}'}]}
    tools:
      refund: {function: refund, needs_approval: true}
      slow: {function: slow}
    agents:
      main: {llm: m, tools: [refund, slow]}
    webhooks:
      ops: {url: "http://127.0.0.1:1/hook", secret_env: OPS_HOOK_SECRET}
`

// usageModel reports cached and reasoning tokens on every call, as a provider with a
// prompt cache and a reasoning model would.
type usageModel struct{ fsm.Model }

func (m usageModel) Call(ctx context.Context, req fsm.ModelRequest) (fsm.ModelResponse, error) {
	resp, err := m.Model.Call(ctx, req)
	resp.Usage.CachedTokens, resp.Usage.ReasoningTokens = 3, 2
	return resp, err
}

// scrape reads /metrics over one kept-alive connection: a request's own measurement
// is taken after its answer is written, and before the connection serves the next.
type scrape struct {
	t   *testing.T
	c   *http.Client
	url string
}

func (s scrape) families() map[string]*dto.MetricFamily {
	s.t.Helper()
	resp, err := s.c.Get(s.url + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return fams
}

// value is the series' value (a counter's or gauge's, a histogram's count); -1 when
// there is no such series.
func (s scrape) value(name string, labels ...string) float64 {
	s.t.Helper()
	f := s.families()[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestEverySeriesMoves: each series an operator pages on moves when its event
// happens — turns by status and code, a suspend then resume counted once, the
// duration histogram, the gauges of running, waiting and queued turns, tokens by
// kind, the writer's batch size and commit time, the database and WAL sizes, the
// webhook outbox, a path no route matches, a turn that cannot be recorded.
func TestEverySeriesMoves(t *testing.T) {
	t.Setenv("OPS_HOOK_SECRET", "0123456789abcdef0123")
	fns, gate, entered := refundAndSlow()
	ctx := context.Background()
	var logged syncBuffer
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "t.db"), ConfigData: []byte(opsConfig), Functions: fns,
		WrapModel: func(_ string, m fsm.Model) fsm.Model { return usageModel{m} }, Logger: zerolog.New(&logged)})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	h, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k": "alice"}})
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()
	m := scrape{t: t, c: &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}, url: srv.URL}
	want := func(what string, got, wanted float64) {
		t.Helper()
		if got != wanted {
			t.Fatalf("%s = %v, want %v", what, got, wanted)
		}
	}
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	run := func(input string) *fsm.Result { t.Helper(); return runTurn(t, tl, s.ID, input) }

	want("store up", m.value("turnlog_store_up"), 1)
	commits := m.value("turnlog_commit_events")
	run("hello")
	want("completed turns", m.value("turnlog_turns_total", "app", "ops", "status", "completed"), 1)
	want("completed turn durations", m.value("turnlog_turn_duration_seconds", "app", "ops", "status", "completed"), 1)
	for _, kind := range []string{"input", "output", "cached", "reasoning"} {
		if v := m.value("turnlog_model_tokens_total", "llm", "m", "kind", kind); v <= 0 {
			t.Fatalf("%s tokens = %v", kind, v)
		}
	}
	if v := m.value("turnlog_commit_events"); v <= commits || m.value("turnlog_commit_seconds") != v {
		t.Fatalf("commits: %v batches before, %v after, %v timed", commits, v, m.value("turnlog_commit_seconds"))
	}
	if m.value("turnlog_db_bytes") <= 0 || m.value("turnlog_wal_bytes") <= 0 {
		t.Fatalf("database %v bytes, WAL %v bytes", m.value("turnlog_db_bytes"), m.value("turnlog_wal_bytes"))
	}
	want("webhook deliveries pending", m.value("turnlog_webhook_outbox_pending"), 1) // nothing delivers without Serve

	failed := run("nothing matches this") // the scripted model has no rule: model_failed
	want("failed turns", m.value("turnlog_turns_total", "app", "ops", "status", "failed"), 1)
	want("failures by code", m.value("turnlog_turn_failures_total", "app", "ops", "code", "model_failed"), 1)

	res := run("refund it")
	want("waiting turns", m.value("turnlog_turns_waiting"), 1)
	want("suspensions", m.value("turnlog_turn_suspensions_total", "app", "ops"), 1)
	want("completed turns while one waits", m.value("turnlog_turns_total", "app", "ops", "status", "completed"), 1)
	yes := true
	st, _ := tl.Engine.Resume(ctx, s.ID, "alice", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: &yes}})
	st.Wait()
	want("completed turns after the resume (counted once)", m.value("turnlog_turns_total", "app", "ops", "status", "completed"), 2)
	want("waiting turns after the resume", m.value("turnlog_turns_waiting"), 0)

	res = run("refund again")
	if _, err := tl.Engine.Cancel(ctx, s.ID, res.TurnID, "not today"); err != nil {
		t.Fatal(err)
	}
	want("canceled turns", m.value("turnlog_turns_total", "app", "ops", "status", "canceled"), 1)
	want("cancellations by code", m.value("turnlog_turn_failures_total", "app", "ops", "code", "canceled"), 1)

	slow, _ := tl.Engine.StartTurn(ctx, s.ID, "slow one")
	<-entered
	want("running turns", m.value("turnlog_turns_running"), 1)
	if _, err := tl.Engine.Enqueue(ctx, s.ID, "alice", "hello again", false); err != nil {
		t.Fatal(err)
	}
	want("queued inputs", m.value("turnlog_inputs_queued"), 1)
	gate <- struct{}{}
	slow.Wait()
	settle(t, tl, s.ID)
	want("running turns after", m.value("turnlog_turns_running"), 0)
	want("queued inputs after", m.value("turnlog_inputs_queued"), 0)
	want("completed turns with the queued one", m.value("turnlog_turns_total", "app", "ops", "status", "completed"), 4)

	resp, _ := m.c.Get(srv.URL + "/no/such/route")
	resp.Body.Close()
	want("a path no route matches", m.value("turnlog_http_request_seconds", "route", "unmatched", "status", "404"), 1)

	promtool(t, m)

	// A turn whose store closes under it cannot be recorded.
	broken, _ := tl.Engine.StartTurn(ctx, s.ID, "slow two")
	<-entered
	tl.Store.Close()
	gate <- struct{}{}
	if _, err := broken.Wait(); err == nil {
		t.Fatal("a turn over a closed store ended well")
	}
	want("turns that could not be recorded", m.value("turnlog_turns_broken_total"), 1)
	want("store up once closed", m.value("turnlog_store_up"), 0)

	// Each turn that did not commit is in the log with its session, turn and code.
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	for _, w := range []struct{ turn, code, level string }{{failed.TurnID, "model_failed", "warn"}, {res.TurnID, "canceled", "warn"}, {broken.ID, "internal", "error"}} {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, `"session":"`+s.ID+`"`) && strings.Contains(l, `"turn":"`+w.turn+`"`) &&
				strings.Contains(l, `"code":"`+w.code+`"`) && strings.Contains(l, `"level":"`+w.level+`"`)
		}
		if !found {
			t.Errorf("no %s line for turn %s (%s) in the log:\n%s", w.level, w.turn, w.code, logged.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the engine's goroutines to log to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// settle waits until the session runs nothing and queues nothing, woken by commits.
// refundAndSlow are two functions: refund answers ok at once; slow says it entered,
// then waits for gate to close.
func refundAndSlow() (fns turnlog.Functions, gate chan struct{}, entered chan struct{}) {
	gate, entered = make(chan struct{}), make(chan struct{}, 4)
	return turnlog.Functions{
		"refund": functool.MustNew("refund", "refunds", func(context.Context, struct{}) (any, error) { return "ok", nil }),
		"slow": functool.MustNew("slow", "waits", func(context.Context, struct{}) (any, error) {
			entered <- struct{}{}
			<-gate
			return "ok", nil
		}),
	}, gate, entered
}

// runTurn runs one turn on session and waits for its result.
func runTurn(t *testing.T, tl *turnlog.Turnlog, session, input string) *fsm.Result {
	t.Helper()
	st, err := tl.Engine.StartTurn(context.Background(), session, input)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func settle(t *testing.T, tl *turnlog.Turnlog, session string) {
	t.Helper()
	wake, stop := tl.Store.Watch(session)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		// The queue first: once it is empty, every queued input's turn has started, so
		// the last turn read after it is the newest.
		queued, qerr := tl.Engine.Queue(ctx, session)
		last, err := tl.Store.LastTurn(ctx, session)
		if err == nil && qerr == nil && last.Status != "running" && len(queued) == 0 {
			// Its end is durable a moment before its run lets the session go.
			seq, _ := tl.Store.LastSeq(ctx, session)
			if err := tl.Engine.Settled(ctx, session, last.ID, seq); err != nil {
				t.Fatal(err)
			}
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			t.Fatalf("session %s did not settle: %+v %v", session, last, err)
		}
	}
}

// promtool checks the exposition with Prometheus's own linter (CI sets
// TURNLOG_REQUIRE_PROMTOOL, and then a missing promtool fails the test).
func promtool(t *testing.T, m scrape) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("TURNLOG_REQUIRE_PROMTOOL") != "" {
			t.Fatalf("promtool is needed (apt-get install --no-install-recommends prometheus): %v", err)
		}
		t.Log("promtool is not installed: the exposition is not linted")
		return
	}
	resp, err := m.c.Get(m.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = resp.Body
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
