package openai_test

import (
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/models/openai"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

const respToolCalls = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m",
 "output":[{"type":"function_call","id":"fc_1","call_id":"call_a","name":"lookup_order","arguments":"{\"order_id\":42}","status":"completed"},
  {"type":"function_call","id":"fc_2","call_id":"call_b","name":"lookup_order","arguments":"{\"order_id\":7}","status":"completed"}],
 "usage":{"input_tokens":30,"output_tokens":12,"total_tokens":42}}`

const respText = `{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"m",
 "output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed",
  "content":[{"type":"output_text","text":"Order 42 is shipped; order 7 is processing.","annotations":[]}]}],
 "usage":{"input_tokens":80,"output_tokens":9,"total_tokens":89}}`

func TestResponsesToolRoundTripSendsExactRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, openai.Config{API: openai.APIResponses}, `{"max_tokens":50,"parallel_tool_calls":true,"reasoning":{"effort":"low"}}`,
		jsonReply(200, respToolCalls), jsonReply(200, respText))
	res, _ := b.turn(t, "where are orders 42 and 7?")
	if res.Status != fsm.StatusCompleted || res.Output != "Order 42 is shipped; order 7 is processing." || res.Usage.InputTokens != 110 {
		t.Fatalf("result = %+v %+v", res, res.Error)
	}
	first, second := b.fake.body(0), b.fake.body(1)
	for k, want := range map[string]string{"model": `"gpt-test"`, "store": "false", "instructions": `"Help with orders."`,
		"max_output_tokens": "50", "parallel_tool_calls": "true", "reasoning": `{"effort":"low"}`,
		"input": `[{"content":"where are orders 42 and 7?","role":"user"}]`} {
		if got := canon(t, first[k]); got != want {
			t.Fatalf("first request %s = %s, want %s", k, got, want)
		}
	}
	if _, ok := first["previous_response_id"]; ok {
		t.Fatal("a request names a previous response")
	}
	if got := canon(t, first["tools"]); !strings.Contains(got, `"name":"lookup_order"`) || !strings.Contains(got, `"type":"function"`) {
		t.Fatalf("tools = %s", got)
	}
	want := `[{"content":"where are orders 42 and 7?","role":"user"},` +
		`{"arguments":"{\"order_id\":42}","call_id":"call_a","name":"lookup_order","type":"function_call"},` +
		`{"arguments":"{\"order_id\":7}","call_id":"call_b","name":"lookup_order","type":"function_call"},` +
		`{"call_id":"call_a","output":"{\"order_id\":42,\"status\":\"shipped\"}","type":"function_call_output"},` +
		`{"call_id":"call_b","output":"{\"order_id\":7,\"status\":\"processing\"}","type":"function_call_output"}]`
	if got := canon(t, second["input"]); got != want {
		t.Fatalf("second input\n%s\nwant\n%s", got, want)
	}
}

func TestResponsesStreaming(t *testing.T) {
	t.Parallel()
	completed := `{"type":"response.completed","sequence_number":3,"response":` + strings.ReplaceAll(respText, "\n", "") + `}`
	b := setup(t, openai.Config{API: openai.APIResponses, Stream: true}, "",
		sseReply(`{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Order 42"}`,
			completed))
	res, _ := b.turn(t, "hi")
	if res.Status != fsm.StatusCompleted || !strings.HasPrefix(res.Output, "Order 42 is shipped") {
		t.Fatalf("result = %+v %+v", res, res.Error)
	}
}

func TestResponsesTruncatedStreamFailsTheCall(t *testing.T) {
	t.Parallel()
	b := setup(t, openai.Config{API: openai.APIResponses, Stream: true}, "",
		sseReply(`{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Order"}`))
	res, _ := b.turn(t, "hi")
	if res.Status != fsm.StatusFailed || res.Error.Code != events.CodeModelFailed || !strings.Contains(res.Error.Message, "before the response was complete") {
		t.Fatalf("result = %+v %+v", res, res.Error)
	}
}

func TestResponsesBadRequestFailsTheTurn(t *testing.T) {
	t.Parallel()
	busy := jsonReply(503, `{"error":{"message":"overloaded"}}`)
	b := setup(t, openai.Config{API: openai.APIResponses}, "", busy, jsonReply(400, `{"error":{"message":"Unsupported parameter: 'top_k'."}}`))
	res, _ := b.turn(t, "hi")
	if res.Status != fsm.StatusFailed || !strings.Contains(res.Error.Message, "Unsupported parameter") || b.fake.count() != 2 {
		t.Fatalf("result = %+v %+v, requests = %d (one 503 retried, the 400 not)", res, res.Error, b.fake.count())
	}
}
