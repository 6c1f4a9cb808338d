package systemtest

import (
	"bufio"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// mockLLMConfig is @dwmkerr/mock-llm's rule file: the last matching rule answers.
const mockLLMConfig = `streaming: {chunkSize: 4, chunkIntervalMs: 1}
rules:
  - path: "/v1/chat/completions"
    match: "@"
    response:
      status: 200
      content: '{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\": 42}"}},{"id":"call_b","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\": 1001}"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}'
  - path: "/v1/chat/completions"
    match: "contains(body.messages[-1].content, 'truncated')"
    response:
      status: 200
      content: '{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_t","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\": 4"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}'
  - path: "/v1/chat/completions"
    match: "contains(body.messages[-1].content, 'stream me')"
    response:
      status: 200
      content: '{"id":"c3","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"an answer that arrives in small pieces"}}]}'
  - path: "/v1/chat/completions"
    match: "body.messages[-1].role == 'tool'"
    response:
      status: 200
      content: '{"id":"c4","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"checked both orders"}}],"usage":{"prompt_tokens":30,"completion_tokens":3,"total_tokens":33}}'
  - path: "/v1/responses"
    match: "@"
    response:
      status: 200
      content: '{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"function_call","id":"fc_1","call_id":"call_r1","name":"lookup_order","arguments":"{\"order_id\": 42}","status":"completed"},{"type":"function_call","id":"fc_2","call_id":"call_r2","name":"lookup_order","arguments":"{\"order_id\": 1001}","status":"completed"}],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}'
  - path: "/v1/responses"
    match: "body.input[-1].type == 'function_call_output'"
    response:
      status: 200
      content: '{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"responses checked both orders","annotations":[]}]}],"usage":{"input_tokens":30,"output_tokens":4,"total_tokens":34}}'
`

// startMockLLM starts @dwmkerr/mock-llm (installed by .ci/install-mcp) on a loopback
// port and returns its base URL.
func startMockLLM(t *testing.T) string {
	t.Helper()
	main, _ := filepath.Abs(".ci/mcp/node_modules/@dwmkerr/mock-llm/dist/main.js")
	if _, err := os.Stat(main); err != nil {
		if os.Getenv("TURNLOG_REQUIRE_MCP") != "" {
			t.Fatalf("@dwmkerr/mock-llm is not installed (.ci/install-mcp installs it): %v", err)
		}
		t.Skipf("@dwmkerr/mock-llm is not installed; run .ci/install-mcp")
	}
	cfg := filepath.Join(t.TempDir(), "mock-llm.yaml")
	os.WriteFile(cfg, []byte(mockLLMConfig), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", main, "--config", cfg)
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", fmt.Sprintf("PORT=%d", port))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "server running on") {
			go func() {
				for sc.Scan() {
				}
			}()
			return fmt.Sprintf("http://127.0.0.1:%d/v1/", port)
		}
	}
	t.Fatal("mock-llm did not start")
	return ""
}

// TestOpenAIAdapterAgainstAThirdPartyServer: the OpenAI adapter (openai-go) against
// @dwmkerr/mock-llm, a server turnlog did not write — Chat Completions and Responses
// with parallel tool calls, a streamed answer, and tool arguments cut short.
func TestOpenAIAdapterAgainstAThirdPartyServer(t *testing.T) {
	t.Parallel()
	base := startMockLLM(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`apps:
  shop:
    start_agent: chat
    llms:
      chat: {provider: openai, model: m, base_url: %[1]s, max_retries: 0, timeout: 20s}
    tools:
      lookup_order: {}
    agents:
      chat: {llm: chat, tools: [lookup_order]}
  streaming:
    start_agent: streamed
    llms:
      streamed: {provider: openai, model: m, base_url: %[1]s, max_retries: 0, stream: true, timeout: 20s}
    agents:
      streamed: {llm: streamed}
  resp:
    start_agent: responses
    llms:
      responses: {provider: openai, api: responses, model: m, base_url: %[1]s, max_retries: 0, timeout: 20s}
    tools:
      lookup_order: {}
    agents:
      responses: {llm: responses, tools: [lookup_order]}
`, base)), 0o644)
	db := filepath.Join(dir, "t.db")
	for _, c := range []struct{ app, input, want string }{
		{"shop", "where are my orders?", "checked both orders"},
		{"resp", "where are my orders?", "responses checked both orders"},
		{"streaming", "stream me an answer", "an answer that arrives in small pieces"},
		{"shop", "truncated call please", "checked both orders"},
	} {
		out, errOut, err := runCLI(t, "run", "--config", cfg, "--app", c.app, "--db", db, c.input)
		if err != nil || strings.TrimSpace(out) != c.want {
			t.Fatalf("%s %q: %v\n%s%s", c.app, c.input, err, out, errOut)
		}
	}
	sqldb, _ := sql.Open("sqlite", "file:"+db+"?mode=ro")
	defer sqldb.Close()
	rows, err := sqldb.Query(`SELECT path, coalesce(data ->> '$.error_kind', ''), coalesce(data ->> '$.output', '') FROM events WHERE type = 'ToolResulted' ORDER BY path`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var path, kind, output string
		rows.Scan(&path, &kind, &output)
		if kind == "" {
			kind = "ok:" + output[:min(len(output), 24)]
		}
		got = append(got, path+" "+kind)
	}
	want := []string{
		`chat/tool/call_a ok:{"carrier":"DHL","eta":"`, `chat/tool/call_b ok:{"carrier":"UPS","eta":"`,
		`responses/tool/call_r1 ok:{"carrier":"DHL","eta":"`, `responses/tool/call_r2 ok:{"carrier":"UPS","eta":"`,
	}
	if len(got) != 4 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tool results:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var invalid string
	if err := sqldb.QueryRow(`SELECT json_extract(data, '$.response.tool_calls[0].invalid') FROM events WHERE type = 'ModelCalled' AND data ->> '$.response.tool_calls[0].id' = 'call_t'`).Scan(&invalid); err != nil || !strings.Contains(invalid, "malformed JSON") {
		t.Fatalf("the cut arguments were not recorded as invalid: %q %v", invalid, err)
	}
	var told int
	sqldb.QueryRow(`SELECT count(*) FROM events WHERE type = 'TurnCommitted' AND data LIKE '%invalid_arguments%the arguments are not valid JSON%'`).Scan(&told)
	if told != 1 {
		t.Fatal("the model was not told its arguments were not JSON")
	}
}
