package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/openai"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// fakeOpenAI is an OpenAI server on httptest: it records every request body and
// answers from a queue of canned replies.
type fakeOpenAI struct {
	mu       sync.Mutex
	requests []string
	replies  []func(w http.ResponseWriter)
	srv      *httptest.Server
}

func newFake(t *testing.T, replies ...func(w http.ResponseWriter)) *fakeOpenAI {
	f := &fakeOpenAI{replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.Path+" "+string(body))
		var reply func(w http.ResponseWriter)
		if len(f.replies) > 0 {
			reply, f.replies = f.replies[0], f.replies[1:]
		}
		f.mu.Unlock()
		if reply == nil {
			http.Error(w, `{"error":{"message":"no reply queued"}}`, 500)
			return
		}
		reply(w)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeOpenAI) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, raw, _ := strings.Cut(f.requests[i], " {")
	var v map[string]any
	json.Unmarshal([]byte("{"+raw), &v)
	return v
}

func jsonReply(status int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After-Ms", "1")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func sseReply(chunks ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
	}
}

const toolCallsReply = `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
 "message":{"role":"assistant","content":null,"tool_calls":[
  {"id":"call_a","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\":42}"}},
  {"id":"call_b","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\":7}"}}]}}],
 "usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}`

const textReply = `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",
 "message":{"role":"assistant","content":"Order 42 is shipped; order 7 is processing."}}],
 "usage":{"prompt_tokens":80,"completion_tokens":9,"total_tokens":89}}`

type orderArgs struct {
	OrderID int `json:"order_id"`
}

type testBundle struct {
	ctx    context.Context
	store  *sqlite.Store
	engine *fsm.Engine
	fake   *fakeOpenAI
	model  *openai.Model
}

func setup(t *testing.T, cfg openai.Config, settings string, replies ...func(w http.ResponseWriter)) testBundle {
	t.Helper()
	f := newFake(t, replies...)
	cfg.BaseURL, cfg.APIKey = f.srv.URL+"/v1/", "sk-test"
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lookup := functool.MustNew("lookup_order", "Look an order up.", func(_ context.Context, a orderArgs) (any, error) {
		return map[string]any{"order_id": a.OrderID, "status": map[int]string{42: "shipped", 7: "processing"}[a.OrderID]}, nil
	})
	agent := &fsm.Agent{Name: "support", Instructions: "Help with orders.", LLM: "gpt", Model: m, Tools: []fsm.Tool{lookup}}
	if settings != "" {
		agent.Settings = json.RawMessage(settings)
	}
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	var n int
	e, err := fsm.New(store, []*fsm.App{{Name: "app", StartAgent: "support", Agents: map[string]*fsm.Agent{"support": agent}}},
		fsm.Options{Clock: time.Now, NewID: func() string { n++; return fmt.Sprintf("id%d", n) }})
	if err != nil {
		t.Fatal(err)
	}
	return testBundle{ctx: context.Background(), store: store, engine: e, fake: f, model: m}
}

func (b testBundle) turn(t *testing.T, input string) (*fsm.Result, string) {
	t.Helper()
	s, err := b.engine.CreateSession(b.ctx, "app", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.engine.RunTurn(b.ctx, s.ID, input)
	if err != nil {
		t.Fatal(err)
	}
	return res, s.ID
}

func canon(t *testing.T, v any) string {
	t.Helper()
	raw, _ := json.Marshal(v)
	c, err := events.Canonicalize(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

func TestChatToolRoundTripSendsExactRequests(t *testing.T) {
	t.Parallel()
	temp := 0.2
	b := setup(t, openai.Config{Temperature: &temp}, `{"max_tokens":50,"parallel_tool_calls":true,"top_p":0.9}`,
		jsonReply(200, toolCallsReply), jsonReply(200, textReply))
	res, _ := b.turn(t, "where are orders 42 and 7?")
	if res.Status != fsm.StatusCompleted || res.Output != "Order 42 is shipped; order 7 is processing." {
		t.Fatalf("result = %+v %+v", res, res.Error)
	}
	if res.Usage.InputTokens != 110 || res.Usage.OutputTokens != 21 {
		t.Fatalf("usage = %+v", res.Usage)
	}
	first, second := b.fake.body(0), b.fake.body(1)
	if got, want := canon(t, first["messages"]), `[{"content":"Help with orders.","role":"system"},{"content":"where are orders 42 and 7?","role":"user"}]`; got != want {
		t.Fatalf("first messages\n%s\nwant\n%s", got, want)
	}
	for k, want := range map[string]string{"model": `"gpt-test"`, "max_completion_tokens": "50", "parallel_tool_calls": "true",
		"top_p": "0.9", "temperature": "0.2", "store": "false"} {
		if got := canon(t, first[k]); got != want {
			t.Fatalf("first request %s = %s, want %s", k, got, want)
		}
	}
	for _, k := range []string{"previous_response_id", "max_tokens", "stream"} {
		if _, ok := first[k]; ok {
			t.Fatalf("first request carries %s", k)
		}
	}
	if got := canon(t, first["tools"]); !strings.Contains(got, `"name":"lookup_order"`) || !strings.Contains(got, `"required":["order_id"]`) {
		t.Fatalf("tools = %s", got)
	}
	want := `[{"content":"Help with orders.","role":"system"},{"content":"where are orders 42 and 7?","role":"user"},` +
		`{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"order_id\":42}","name":"lookup_order"},"id":"call_a","type":"function"},` +
		`{"function":{"arguments":"{\"order_id\":7}","name":"lookup_order"},"id":"call_b","type":"function"}]},` +
		`{"content":"{\"order_id\":42,\"status\":\"shipped\"}","role":"tool","tool_call_id":"call_a"},` +
		`{"content":"{\"order_id\":7,\"status\":\"processing\"}","role":"tool","tool_call_id":"call_b"}]`
	if got := canon(t, second["messages"]); got != want {
		t.Fatalf("second messages\n%s\nwant\n%s", got, want)
	}
}

func TestChatStreaming(t *testing.T) {
	t.Parallel()
	b := setup(t, openai.Config{Stream: true}, "",
		sseReply(`{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
			`{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
			`{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
			`[DONE]`))
	res, _ := b.turn(t, "hi")
	if res.Status != fsm.StatusCompleted || res.Output != "Hello" || res.Usage.OutputTokens != 2 {
		t.Fatalf("result = %+v %+v", res, res.Error)
	}
	if got := canon(t, b.fake.body(0)["stream"]); got != "true" {
		t.Fatalf("stream = %s", got)
	}
}

func TestChatTruncatedStreamFailsTheCall(t *testing.T) {
	t.Parallel()
	b := setup(t, openai.Config{Stream: true}, "",
		sseReply(`{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`))
	res, _ := b.turn(t, "hi")
	if res.Status != fsm.StatusFailed || res.Error.Code != events.CodeModelFailed || !strings.Contains(res.Error.Message, "before the response was complete") {
		t.Fatalf("result = %+v %+v", res, res.Error)
	}
}

func TestChatRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	busy := jsonReply(503, `{"error":{"message":"overloaded"}}`)
	b := setup(t, openai.Config{}, "", busy, busy, jsonReply(200, textReply))
	res, _ := b.turn(t, "hi")
	if res.Status != fsm.StatusCompleted || b.fake.count() != 3 {
		t.Fatalf("result = %+v, requests = %d, want completed after 3", res, b.fake.count())
	}
}

func TestChatBadRequestIsNotRetriedAndFailsTheTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, openai.Config{}, "", jsonReply(400, `{"error":{"message":"Invalid value for 'model'.","type":"invalid_request_error"}}`))
	res, sid := b.turn(t, "hi")
	if res.Status != fsm.StatusFailed || res.Error.Code != events.CodeModelFailed || !strings.Contains(res.Error.Message, "Invalid value for 'model'") {
		t.Fatalf("result = %+v %+v", res, res.Error)
	}
	if b.fake.count() != 1 {
		t.Fatalf("a 400 was retried: %d requests", b.fake.count())
	}
	if h, _ := b.store.History(b.ctx, sid); len(h) != 0 {
		t.Fatalf("a failed turn committed %v", h)
	}
}

// TestReplayedTurnCallsNoNetwork re-drives a recorded openai turn on a fresh store:
// every model call is answered from the recording, so the server sees no request.
func TestReplayedTurnCallsNoNetwork(t *testing.T) {
	t.Parallel()
	b := setup(t, openai.Config{}, "", jsonReply(200, toolCallsReply), jsonReply(200, textReply))
	res, sid := b.turn(t, "where are orders 42 and 7?")
	if res.Status != fsm.StatusCompleted {
		t.Fatal(res.Error)
	}
	recorded, err := b.store.Events(b.ctx, sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := b.fake.count()
	replayStore, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	app, _ := b.engine.App("app")
	e, err := fsm.New(replayStore, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: func() string { return "x" }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Replay(b.ctx, recorded); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if after := b.fake.count(); after != before {
		t.Fatalf("replay made %d requests", after-before)
	}
}

func TestSettingsRefusedByName(t *testing.T) {
	t.Parallel()
	for settings, name := range map[string]string{
		`{"temperature":0.5}`:          "settings.temperature",
		`{"previous_response_id":"r"}`: "settings.previous_response_id",
		`{"store":true}`:               "settings.store",
		`{"reasoning_effort":"high"}`:  "settings.reasoning_effort",
		`{"logit_bias":{}}`:            "settings.logit_bias",
		`{"max_tokens":"many"}`:        "settings.max_tokens",
		`{"reasoning":{"budget":3}}`:   "settings.reasoning.budget",
	} {
		err := openai.CheckSettings([]byte(settings))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: err = %v, want it to name %s", settings, err, name)
		}
	}
	if err := openai.CheckSettings([]byte(`{"max_tokens":10,"reasoning":{"effort":"low"},"tool_choice":"auto","verbosity":"low"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestStreamedTextArrivesAsItComes(t *testing.T) {
	t.Parallel()
	chat := setup(t, openai.Config{Stream: true}, "",
		sseReply(`{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
			`{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}`,
			`[DONE]`))
	resp := setup(t, openai.Config{API: openai.APIResponses, Stream: true}, "",
		sseReply(`{"type":"response.output_text.delta","sequence_number":1,"item_id":"m","output_index":0,"content_index":0,"delta":"Order 42"}`,
			`{"type":"response.output_text.delta","sequence_number":2,"item_id":"m","output_index":0,"content_index":0,"delta":" is shipped; order 7 is processing."}`,
			`{"type":"response.completed","sequence_number":3,"response":`+strings.ReplaceAll(respText, "\n", "")+`}`))
	for _, tc := range []struct {
		b    testBundle
		want string
	}{{chat, "Hel|lo"}, {resp, "Order 42| is shipped; order 7 is processing."}} {
		var pieces []string
		res, err := tc.b.model.Call(context.Background(), fsm.ModelRequest{Items: []events.Item{events.UserMessage("hi")},
			OnText: func(d string) { pieces = append(pieces, d) }})
		if err != nil || strings.Join(pieces, "|") != tc.want || res.Text != strings.Join(pieces, "") {
			t.Fatalf("pieces %q, text %q, err %v", pieces, res.Text, err)
		}
	}
}
