package turnlog_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// TestLogsHoldNoSecret: a day's work — requests with an API key (and a wrong one), an
// HTTP tool sent an environment secret that its answer echoes, a tool output holding
// a pattern the policy redacts, a turn that fails — leaves none of those secrets in
// the log, whose request lines carry request id and session, and whose line of the
// failed turn its session, turn and code.
func TestLogsHoldNoSecret(t *testing.T) {
	const (
		apiKey   = "k-log-secret-0123456789"
		wrongKey = "k-wrong-9876543210"
		envToken = "tok-env-secret-5555"
		planted  = "sk-live-abcdefghijklmnop1234"
	)
	t.Setenv("LOG_TEST_TOKEN", envToken)
	crm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"key_you_sent": "`+r.Header.Get("X-Key")+`", "api": "`+planted+`"}`)
	}))
	defer crm.Close()
	cfg := `guardrail_policy:
  - {name: keys, action: redact, pattern: 'sk-live-[0-9a-z]{16,}', applies_to: [tool_output, model_output]}
apps:
  s:
    start_agent: main
    llms:
      m:
        provider: scripted
        rules:
          - {when: {after_tool: crm}, reply: "the CRM said {{output}}"}
          - {when: {input: '^look'}, tools: [{name: crm, arguments: '{}'}]}
    tools:
      crm: {url: "` + crm.URL + `/crm", description: the CRM, headers: {X-Key: "${LOG_TEST_TOKEN}"}}
    agents:
      main: {llm: m, tools: [crm]}
`
	var logged syncBuffer
	log := zerolog.New(&logged)
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "t.db"), ConfigData: []byte(cfg), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	h, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{apiKey: "alice"}, Logger: log})
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()
	call := func(key, method, path, body string) string {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := (&http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return string(raw)
	}
	call(wrongKey, "GET", "/v1/sessions", "")
	session := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(call(apiKey, "POST", "/v1/sessions", `{"app":"s"}`))[1]
	if out := call(apiKey, "POST", "/v1/sessions/"+session+"/turns", `{"input":"look it up"}`); !strings.Contains(out, envToken) {
		t.Fatalf("the secret did not flow through the turn (the test would show nothing): %s", out)
	}
	failed := call(apiKey, "POST", "/v1/sessions/"+session+"/turns", `{"input":"nothing matches `+planted+`"}`)
	turn := regexp.MustCompile(`"turn_id":"([^"]+)"`).FindStringSubmatch(failed)
	call(apiKey, "GET", "/v1/sessions/"+session, "") // after the turns' requests are logged
	text := logged.String()
	for _, secret := range []string{apiKey, wrongKey, envToken, planted} {
		if strings.Contains(text, secret) {
			t.Errorf("the log holds %q:\n%s", secret, text)
		}
	}
	if !regexp.MustCompile(`"request_id":"[^"]+","session":"` + session + `"`).MatchString(text) {
		t.Errorf("no request line names its session:\n%s", text)
	}
	if turn == nil || !strings.Contains(text, `"session":"`+session+`","turn":"`+turn[1]+`"`) || !strings.Contains(text, `"code":"model_failed"`) {
		t.Errorf("no line of the failed turn %v with its session, turn and code:\n%s", turn, text)
	}
	// The turn's line and the line of the request that ran it name the same request,
	// session and turn.
	var ended, asked map[string]any
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			t.Fatalf("a log line that is not JSON: %s", line)
		}
		if m["message"] == "turn ended without committing" {
			ended = m
		}
		if m["message"] == "request" && m["method"] == "POST" && m["route"] == "/v1/sessions/:id/turns" && turn != nil && m["turn"] == turn[1] {
			asked = m
		}
	}
	if ended == nil || asked == nil || ended["request_id"] == nil || ended["request_id"] != asked["request_id"] || asked["session"] != session {
		t.Errorf("the failed turn's line %v and its request's line %v do not name the same request", ended, asked)
	}
}
