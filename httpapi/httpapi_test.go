package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/adapters/observability/metrics"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/client"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

type testBundle struct {
	store   *sqlite.Store
	dbPath  string
	srv     *httptest.Server
	api     *httpapi.Server
	log     *syncBuffer
	release chan struct{} // closes the blocking tool of the "gate" app
	entered chan struct{} // receives when the blocking tool starts
	// researcherCalls counts the model calls of the "nested" app's researcher agent.
	researcherCalls *atomic.Int64
}

type noArgs struct{}

// gateApp's only tool blocks until the test releases it, to hold a turn open.
func gateApp(entered, release chan struct{}) *fsm.App {
	block := functool.MustNew("block", "waits", func(context.Context, noArgs) (any, error) {
		entered <- struct{}{}
		<-release
		return "released", nil
	})
	var calls atomic.Int64
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if r.Items[len(r.Items)-1].Type == events.ItemFunctionCallOutput {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "done"}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: fmt.Sprintf("c%d", calls.Add(1)), Name: "block", Arguments: json.RawMessage(`{}`)}}}}, nil
	})
	return &fsm.App{Name: "gate", StartAgent: "g", Agents: map[string]*fsm.Agent{
		"g": {Name: "g", LLM: "m", Model: model, Tools: []fsm.Tool{block}}}}
}

type refundArgs struct {
	OrderID int `json:"order_id"`
}

type approvalTool struct{ *functool.Tool[refundArgs] }

func (t approvalTool) Spec() fsm.ToolSpec {
	s := t.Tool.Spec()
	s.NeedsApproval = true
	return s
}

// nestedApp: the lead asks its research tool (the researcher agent); the researcher
// says it is checking, calls a refund that needs approval, then answers.
func nestedApp(researcherCalls *atomic.Int64) *fsm.App {
	refund := approvalTool{functool.MustNew("refund", "refunds an order", func(_ context.Context, a refundArgs) (any, error) {
		return map[string]int{"refunded": a.OrderID}, nil
	})}
	lead := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if last := r.Items[len(r.Items)-1]; last.Type == events.ItemFunctionCallOutput {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "lead: " + last.Output}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
			{ID: "r1", Name: "research", Arguments: json.RawMessage(`{"input":"refund 7"}`)}}}}, nil
	})
	researcher := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		researcherCalls.Add(1)
		if last := r.Items[len(r.Items)-1]; last.Type == events.ItemFunctionCallOutput {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "researcher done: " + last.Output}}, nil
		}
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "checking the refund", ToolCalls: []events.ToolCall{
			{ID: "n1", Name: "refund", Arguments: json.RawMessage(`{"order_id":7}`)}}}}, nil
	})
	return &fsm.App{Name: "nested", StartAgent: "lead", Agents: map[string]*fsm.Agent{
		"lead":       {Name: "lead", LLM: "m", Model: lead, AgentTools: []fsm.AgentTool{{Agent: "researcher", Name: "research"}}},
		"researcher": {Name: "researcher", LLM: "m", Model: researcher, Tools: []fsm.Tool{refund}},
	}}
}

type modelFunc func(fsm.ModelRequest) (fsm.ModelResponse, error)

func (f modelFunc) Call(_ context.Context, r fsm.ModelRequest) (fsm.ModelResponse, error) {
	return f(r)
}

func setup(t *testing.T) testBundle {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith serves the demo (and the gate app); wrap, when set, wraps the demo's models.
func setupWith(t *testing.T, wrap func(string, fsm.Model) fsm.Model) testBundle {
	t.Helper()
	return setupReading(t, wrap, nil)
}

// setupReading is setupWith whose API reads through read(store) when read is set.
func setupReading(t *testing.T, wrap func(string, fsm.Model) fsm.Model, read func(httpapi.Reader) httpapi.Reader) testBundle {
	t.Helper()
	store, path := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	apps, err := turnlogtest.LoadApps(t, "demo", demo.Config, turnlog.Options{Functions: demo.Functions(), WrapModel: wrap})
	if err != nil {
		t.Fatal(err)
	}
	b := testBundle{release: make(chan struct{}), entered: make(chan struct{}, 4)}
	b.researcherCalls = &atomic.Int64{}
	apps = append(apps, gateApp(b.entered, b.release), nestedApp(b.researcherCalls), policyApp(), budgetedApp(), budgetedByOperators())
	var n atomic.Int64
	m := metrics.New()
	e, err := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: func() string { return fmt.Sprintf("id%04d", n.Add(1)) }, Observer: m, CancelGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b.log = &syncBuffer{}
	var reader httpapi.Reader = store
	if read != nil {
		reader = read(store)
	}
	api := httpapi.New(httpapi.Config{Engine: e, Reader: reader, Idempotency: store, BodyLimit: "64K",
		Keys:      map[string]string{"key-alice": "alice", "key-bob": "bob", "key-root": "root"},
		AdminKeys: map[string]bool{"key-root": true}, Deliveries: store,
		Ready: store.Ready, Metrics: m.Handler(), Meter: m, Logger: zerolog.New(b.log)})
	b.api, b.store, b.dbPath = api, store, path
	b.srv = httptest.NewServer(api.Handler())
	t.Cleanup(b.srv.Close)
	t.Cleanup(api.Stop) // runs first: live streams end, so Close does not wait on them
	t.Cleanup(func() {
		select {
		case <-b.release:
		default:
			close(b.release)
		}
	})
	return b
}

type response struct {
	status int
	body   map[string]any
	raw    string
	header http.Header
}

func (b testBundle) do(t *testing.T, method, path, key, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := response{status: res.StatusCode, raw: string(raw), header: res.Header}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func (r response) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r response) errorMessage() string {
	e, _ := r.body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// as is the typed client acting with key: what the happy paths use (bad input is
// sent as raw bytes with do).
func (b testBundle) as(key string) *client.Client { return client.New(b.srv.URL, key, nil) }

func (b testBundle) newSession(t *testing.T, key, app string) string {
	t.Helper()
	s, err := b.as(key).CreateSession(context.Background(), app, json.RawMessage(`{"ticket":12}`))
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	return s.ID
}

func TestSessionTurnHistoryEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := context.Background(), b.as("key-alice")
	s, err := c.CreateSession(ctx, "demo", json.RawMessage(`{"ticket":12}`))
	if err != nil || s.App != "demo" || s.CreatedAt.IsZero() || string(s.Metadata) != `{"ticket":12}` {
		t.Fatalf("create: %+v %v", s, err)
	}
	res, err := c.RunTurn(ctx, s.ID, client.TurnRequest{Input: "where is order 42?"})
	if err != nil || res.Status != "completed" || !strings.Contains(res.Output, "shipped") || res.TurnID == "" || res.Items == nil || res.Interrupts == nil {
		t.Fatalf("turn: %+v %v", res, err)
	}
	if items, err := c.History(ctx, s.ID); err != nil || len(items) != 4 {
		t.Fatalf("history: %+v %v", items, err)
	}
	if all, err := c.Events(ctx, s.ID, 0); err != nil || len(all) != 7 {
		t.Fatalf("events: %d %v", len(all), err)
	}
	if tail, err := c.Events(ctx, s.ID, 5); err != nil || len(tail) != 2 || tail[0].Seq != 6 {
		t.Fatalf("events after 5: %+v %v", tail, err)
	}
	if err := c.Healthz(ctx); err != nil {
		t.Fatalf("healthz: %v", err)
	}
}

func TestErrorStatuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	turns := "/v1/sessions/" + id + "/turns"
	cases := []struct {
		name, method, path, key, body string
		status                        int
		code, mentions                string
	}{
		{"malformed JSON", "POST", "/v1/sessions", "key-alice", `{"app":`, 400, "invalid", "malformed"},
		{"unknown field", "POST", "/v1/sessions", "key-alice", `{"app":"demo","colour":1}`, 400, "invalid", "colour"},
		{"wrong type", "POST", turns, "key-alice", `{"input":42}`, 400, "invalid", "input"},
		{"integer beyond 2^53", "POST", "/v1/sessions", "key-alice", `{"app":"demo","metadata":{"n":9007199254740993}}`, 400, "invalid", "$.metadata.n"},
		{"missing app", "POST", "/v1/sessions", "key-alice", `{}`, 400, "invalid", "app"},
		{"unknown app", "POST", "/v1/sessions", "key-alice", `{"app":"nope"}`, 400, "invalid", "nope"},
		{"empty input", "POST", turns, "key-alice", `{"input":"  "}`, 400, "invalid", "input"},
		{"no key", "POST", "/v1/sessions", "", `{"app":"demo"}`, 401, "unauthorized", "key"},
		{"bad key", "GET", "/v1/sessions/" + id + "/history", "key-mallory", "", 401, "unauthorized", "unknown API key"},
		{"another user's session", "GET", "/v1/sessions/" + id + "/history", "key-bob", "", 404, "not_found", id},
		{"another user's turn", "POST", turns, "key-bob", `{"input":"hi"}`, 404, "not_found", id},
		{"unknown session", "GET", "/v1/sessions/nope/events", "key-alice", "", 404, "not_found", "nope"},
		{"bad after", "GET", "/v1/sessions/" + id + "/events?after=-1", "key-alice", "", 400, "invalid", "after"},
		{"resume without suspension", "POST", turns, "key-alice", `{"resume_map":{"x":{"confirmed":true}}}`, 409, "conflict", "no turn to resume"},
		{"oversized body", "POST", turns, "key-alice", `{"input":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "too_large", "too large"},
		{"unknown route", "GET", "/v1/nothing", "key-alice", "", 404, "not_found", ""},
	}
	for _, tc := range cases {
		r := b.do(t, tc.method, tc.path, tc.key, tc.body)
		if r.status != tc.status || r.errorCode() != tc.code || !strings.Contains(r.errorMessage(), tc.mentions) {
			t.Errorf("%s: got %d %s, want %d %s mentioning %q", tc.name, r.status, r.raw, tc.status, tc.code, tc.mentions)
		}
		if tc.status == http.StatusUnauthorized && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer ") {
			t.Errorf("%s: a 401 without WWW-Authenticate: Bearer (%q)", tc.name, r.header.Get("WWW-Authenticate"))
		}
	}
	// Nothing above changed the session.
	if r := b.do(t, "GET", "/v1/sessions/"+id+"/events", "key-alice", ""); len(r.body["events"].([]any)) != 1 {
		t.Fatalf("bad requests changed the log: %s", r.raw)
	}
}

func TestConcurrentTurnOnOneSessionIs409(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "gate")
	first := make(chan response, 1)
	go func() { first <- b.do(t, "POST", "/v1/sessions/"+id+"/turns", "key-alice", `{"input":"one"}`) }()
	<-b.entered // the first turn is inside its tool
	r := b.do(t, "POST", "/v1/sessions/"+id+"/turns", "key-alice", `{"input":"two"}`)
	if r.status != http.StatusConflict || r.errorCode() != "conflict" {
		t.Fatalf("second turn while the first runs: %d %s", r.status, r.raw)
	}
	close(b.release)
	if r := <-first; r.status != http.StatusOK || r.body["status"] != "completed" {
		t.Fatalf("first turn: %d %s", r.status, r.raw)
	}
}

func TestDevModeActsAsDev(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	apps, _ := turnlogtest.LoadApps(t, "demo", demo.Config, turnlog.Options{Functions: demo.Functions()})
	e, _ := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: func() string { return "s1" }})
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: e, Reader: store, Dev: true}).Handler())
	defer srv.Close()
	res, err := http.Post(srv.URL+"/v1/sessions", "application/json", bytes.NewBufferString(`{"app":"demo"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(res.Body).Decode(&body)
	if res.StatusCode != http.StatusCreated || body["owner"] != "dev" {
		t.Fatalf("dev create: %d %v", res.StatusCode, body)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
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
