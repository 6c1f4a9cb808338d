package systemtest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestRestartWhileSuspended kills a serving turnlog (SIGKILL) while a turn waits for
// approval, starts it again on the same file, and approves: the turn completes and
// the model provider (a fake OpenAI server) never sees a request repeated.
func TestRestartWhileSuspended(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	replies := []string{
		`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_r","type":"function","function":{"name":"issue_refund","arguments":"{\"order_id\":42}"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		`{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Refund issued."}}],"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23}}`,
	}
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, string(body))
		mu.Unlock()
		if n >= len(replies) {
			http.Error(w, `{"error":{"message":"unexpected request"}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[n])
	}))
	defer fake.Close()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`apps:
  shop:
    start_agent: support
    llms:
      gpt: {provider: openai, model: gpt-test, base_url: %s/v1/, max_retries: 0}
    tools:
      issue_refund: {needs_approval: true}
    agents:
      support: {llm: gpt, tools: [issue_refund]}
`, fake.URL)), 0o644)
	db := filepath.Join(dir, "turnlog.db")

	start := func() (*exec.Cmd, string) { return serveChildOn(t, db, cfg, dir) }
	post := func(base, path, body string) string {
		res, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 {
			t.Fatalf("%s: %d %s", path, res.StatusCode, raw)
		}
		return string(raw)
	}

	cmd, base := start()
	raw := post(base, "/v1/sessions", `{"app":"shop"}`)
	session := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(raw)[1]
	raw = post(base, "/v1/sessions/"+session+"/turns", `{"input":"refund order 42"}`)
	m := regexp.MustCompile(`"suspend_payload":\{"id":"([^"]+)"`).FindStringSubmatch(raw)
	if m == nil {
		t.Fatalf("not suspended: %s", raw)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	cmd, base = start()
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	raw = post(base, "/v1/sessions/"+session+"/turns", `{"resume_map":{"`+m[1]+`":{"confirmed":true}}}`)
	if !strings.Contains(raw, `"status":"completed"`) || !strings.Contains(raw, "Refund issued.") {
		t.Fatalf("resume after restart: %s", raw)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0] == bodies[1] || !strings.Contains(bodies[1], `"tool_call_id":"call_r"`) {
		t.Fatalf("the provider saw %d requests (want 2, none repeated):\n%s", len(bodies), strings.Join(bodies, "\n"))
	}
}
