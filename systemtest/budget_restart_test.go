package systemtest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestRestartWhileHeldAtABudget kills a serving turnlog (SIGKILL) while a turn waits
// at its budget, starts it again on the same file, and extends the budget: the turn
// completes, the model provider (a fake OpenAI server) sees no request twice, and the
// spend counts each call once at the price table's cost.
func TestRestartWhileHeldAtABudget(t *testing.T) {
	t.Parallel()
	fake := newCannedOpenAI(t,
		`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_l","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\":42}"}}]}}],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`,
		`{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Order 42 is shipped."}}],"usage":{"prompt_tokens":150,"completion_tokens":10,"total_tokens":160}}`,
	)
	// A call may answer 50 tokens: the first fits (0 + 50 ≤ 60), the second not (20 + 50).
	srv := newServedConfig(t, fmt.Sprintf(`apps:
  shop:
    start_agent: support
    budgets:
      turn: {output_tokens: 60}
    llms:
      gpt: {provider: openai, model: gpt-test, base_url: %s/v1/, max_retries: 0, price: {input: 2, output: 8}}
    tools:
      lookup_order: {}
    agents:
      support: {llm: gpt, tools: [lookup_order], settings: {max_tokens: 50}}
`, fake.URL))

	cmd, base := srv.start()
	raw := srv.call("POST", base+"/v1/sessions", `{"app":"shop"}`)
	session := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(raw)[1]
	raw = srv.call("POST", base+"/v1/sessions/"+session+"/turns", `{"input":"where is order 42?"}`)
	m := regexp.MustCompile(`"suspend_payload":\{"id":"([^"]+)","kind":"budget"`).FindStringSubmatch(raw)
	if m == nil || !strings.Contains(raw, `"spent":{"cost":0.00036,"input_tokens":100,"output_tokens":20,"total_tokens":120}`) {
		t.Fatalf("not held at the budget: %s", raw)
	}
	srv.kill(cmd)

	cmd, base = srv.start()
	defer srv.stop(cmd)
	if raw := srv.call("GET", base+"/v1/sessions/"+session+"/interrupts", ""); !strings.Contains(raw, `"kind":"budget"`) {
		t.Fatalf("after the restart the question is gone: %s", raw)
	}
	raw = srv.call("POST", base+"/v1/sessions/"+session+"/turns", `{"resume_map":{"`+m[1]+`":{"extend":{"output_tokens":40}}}}`)
	if !strings.Contains(raw, `"status":"completed"`) || !strings.Contains(raw, "Order 42 is shipped.") {
		t.Fatalf("resume after restart: %s", raw)
	}
	// (100×2 + 20×8 + 150×2 + 10×8) / 1e6
	if raw := srv.call("GET", base+"/v1/sessions/"+session+"/spend", ""); !strings.Contains(raw,
		`"session":{"support":{"calls":2,"usage":{"input_tokens":250,"output_tokens":30},"cost":0.00074}}`) ||
		!strings.Contains(raw, `{"scope":"turn","level":"app","limit":{"output_tokens":100},"spent":{"input_tokens":250,"output_tokens":30,"total_tokens":280,"cost":0.00074}}`) {
		t.Fatalf("spend: %s", raw)
	}
	fake.sawEachOnce(t, 2, "call_l")
}
