package systemtest

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestRestartWhileSuspended kills a serving turnlog (SIGKILL) while a turn waits for
// approval, starts it again on the same file, and approves: the turn completes and
// the model provider (a fake OpenAI server) never sees a request repeated.
func TestRestartWhileSuspended(t *testing.T) {
	t.Parallel()
	fake := newCannedOpenAI(t,
		`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_r","type":"function","function":{"name":"issue_refund","arguments":"{\"order_id\":42}"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		`{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Refund issued."}}],"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23}}`,
	)
	srv := newServedConfig(t, fmt.Sprintf(`apps:
  shop:
    start_agent: support
    llms:
      gpt: {provider: openai, model: gpt-test, base_url: %s/v1/, max_retries: 0}
    tools:
      issue_refund: {needs_approval: true}
    agents:
      support: {llm: gpt, tools: [issue_refund]}
`, fake.URL))

	cmd, base := srv.start()
	raw := srv.call("POST", base+"/v1/sessions", `{"app":"shop"}`)
	session := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(raw)[1]
	raw = srv.call("POST", base+"/v1/sessions/"+session+"/turns", `{"input":"refund order 42"}`)
	m := regexp.MustCompile(`"suspend_payload":\{"id":"([^"]+)"`).FindStringSubmatch(raw)
	if m == nil {
		t.Fatalf("not suspended: %s", raw)
	}
	srv.kill(cmd)

	cmd, base = srv.start()
	defer srv.stop(cmd)
	raw = srv.call("POST", base+"/v1/sessions/"+session+"/turns", `{"resume_map":{"`+m[1]+`":{"confirmed":true}}}`)
	if !strings.Contains(raw, `"status":"completed"`) || !strings.Contains(raw, "Refund issued.") {
		t.Fatalf("resume after restart: %s", raw)
	}
	fake.sawEachOnce(t, 2, "call_r")
}
