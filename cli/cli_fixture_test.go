package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/examples/demo"
)

// mcpEverything is the folder where .ci/install-mcp installs @modelcontextprotocol/server-everything
// (or TURNLOG_MCP_EVERYTHING): skipped without it, failed under TURNLOG_REQUIRE_MCP.
func mcpEverything(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TURNLOG_MCP_EVERYTHING")
	if dir == "" {
		dir, _ = filepath.Abs(filepath.Join(".ci", "mcp"))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js")); err != nil {
		if os.Getenv("TURNLOG_REQUIRE_MCP") != "" {
			t.Fatalf("server-everything is not installed in %s: %v", dir, err)
		}
		t.Skipf("server-everything is not installed in %s; run .ci/install-mcp", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node: %v", err)
	}
	return dir
}

const fixtureAppYAML = `apps:
  shop:
    start_agent: clerk
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: "done: {{outputs}}"
          - when: {input: "refund"}
            tools:
              - {name: refund, arguments: '{"order_id": 42}'}
              - {name: everything__get-sum, arguments: '{"a": 2, "b": 3}'}
              - {name: house_rules, arguments: '{}'}
          - reply: "hello"
      spare:
        provider: openai
        model: gpt-4.1-mini
        api_key_env: SHOP_OPENAI_KEY
        base_url: http://user:pass@127.0.0.1:9/v1/
    tools:
      refund:
        url: URL/path-s3cr3t?key=query-s3cr3t
        description: Refund an order.
        parameters: schemas/refund.json
        secret_env: SHOP_TOOL_SECRET
        dedupe: idempotency_key
        headers: {Authorization: "Bearer ${SHOP_TOKEN}", X-Shop: literal-s3cr3t}
      house_rules: {idempotent: true}
    mcp:
      servers:
        everything:
          command: [node, node_modules/@modelcontextprotocol/server-everything/dist/index.js, stdio, --api-key=arg-s3cr3t]
          dir: JSDIR
          allowed_tools: [get-sum]
          env: ["GREETING=hush-s3cr3t"]
          timeout: 30s
    webhooks:
      ops: {url: "http://127.0.0.1:9/hook", secret_env: SHOP_HOOK_SECRET}
    agents:
      clerk:
        llm: script
        instructions: You refund orders.
        tools: [refund, everything__get-sum, house_rules]
        skills: [skills]
`

// TestAnExportedFixtureReplaysWithoutSecretsOrServers: export --fixture writes the
// events, the app's config without its secrets and webhooks, the tools as the
// recording knew them (an MCP server's, a Go function of the exporting program, an
// HTTP tool's) and the skills, and replays it at once; the fixture then replays where
// no secret is set, node is not on PATH, the function is not offered, and nothing
// is called — where sessions and show read the log too, and export needs no secret.
// Changed, the config makes the export say where the replay diverges.
func TestAnExportedFixtureReplaysWithoutSecretsOrServers(t *testing.T) {
	js := mcpEverything(t)
	var calls atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"refunded": "58.40 EUR"}`)
	}))
	defer receiver.Close()
	for k, v := range map[string]string{"SHOP_OPENAI_KEY": "sk-live-s3cr3t", "SHOP_TOOL_SECRET": "a-signing-secret-s3cr3t", "SHOP_TOKEN": "tok-s3cr3t", "SHOP_HOOK_SECRET": "hook-secret-of-length-s3cr3t"} {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "app", "agent.yaml")
	os.MkdirAll(filepath.Join(dir, "app", "schemas"), 0o755)
	os.MkdirAll(filepath.Join(dir, "app", "skills", "refunds"), 0o755)
	os.WriteFile(filepath.Join(dir, "app", "schemas", "refund.json"), []byte(`{"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "app", "skills", "refunds", "SKILL.md"), []byte("---\nname: refunds\ndescription: How refunds are paid.\n---\nRefunds go back to the card.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "app", "skills", "refunds", ".env"), []byte("TOKEN=file-s3cr3t\n"), 0o644) // beside a skill: not the skill's
	os.WriteFile(cfg, []byte(strings.NewReplacer("URL", receiver.URL+"/refund", "JSDIR", js).Replace(fixtureAppYAML)), 0o644)
	db := filepath.Join(dir, "turnlog.db")
	exporting := Wiring{Functions: demo.Functions()}
	exporting.Functions["house_rules"] = functool.MustNew("house_rules", "The shop's house rules.", func(context.Context, struct{}) (any, error) {
		return "be kind", nil
	})
	run := func(w Wiring, args ...string) (string, error) {
		var out, errOut strings.Builder
		err := RunWith(context.Background(), args, &out, &errOut, w)
		return out.String() + errOut.String(), err
	}
	out, err := run(exporting, "run", "--app", "shop", "--config", cfg, "--db", db, "refund order 42")
	if err != nil || !strings.Contains(out, "done: ") || !strings.Contains(out, "58.40 EUR") || !strings.Contains(out, "The sum of 2 and 3 is 5.") {
		t.Fatalf("the recorded turn: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^session (\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no session in %s", out)
	}
	session := m[1]
	fixture := filepath.Join(dir, "fixture")
	out, err = run(exporting, "export", "--config", cfg, "--db", db, "--fixture", fixture, session)
	if err != nil || !strings.Contains(out, "replay ok: session "+session+", 1 turns") || !strings.Contains(out, "3 tools in tools.json, skills skills") {
		t.Fatalf("export --fixture: %v\n%s", err, out)
	}
	written, _ := os.ReadFile(filepath.Join(fixture, "agent.yaml"))
	if strings.Contains(string(written), "s3cr3t") || strings.Contains(string(written), "user:pass") || strings.Contains(string(written), "webhooks:") ||
		!strings.Contains(string(written), "[removed]") || strings.Contains(string(written), "schemas/refund.json") {
		t.Errorf("the exported config keeps a secret, a webhook or a schema file's path:\n%s", written)
	}
	var tools []struct {
		Name   string
		Policy *struct{ Level int }
	}
	raw, _ := os.ReadFile(filepath.Join(fixture, "tools.json"))
	if err := json.Unmarshal(raw, &tools); err != nil || len(tools) != 3 || tools[0].Name != "everything__get-sum" || tools[0].Policy == nil {
		t.Errorf("tools.json: %v %s", err, raw)
	}
	if _, err := os.Stat(filepath.Join(fixture, "skills", "refunds", "SKILL.md")); err != nil {
		t.Errorf("the skills were not copied: %v", err)
	}
	filepath.WalkDir(fixture, func(p string, d os.DirEntry, err error) error { // no secret anywhere in the fixture
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), "s3cr3t") {
				t.Errorf("%s holds a secret", p)
			}
		}
		return nil
	})

	// Elsewhere: no secret, no node, no house_rules function; nothing is called.
	for _, k := range []string{"SHOP_OPENAI_KEY", "SHOP_TOOL_SECRET", "SHOP_TOKEN", "SHOP_HOOK_SECRET"} {
		t.Setenv(k, "")
	}
	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir())
	before := calls.Load()
	out, err = run(Wiring{Functions: demo.Functions()}, "replay", fixture)
	if err != nil || !strings.Contains(out, "replay ok: session "+session+", 1 turns") {
		t.Fatalf("replay of the fixture elsewhere: %v\n%s", err, out)
	}
	if calls.Load() != before {
		t.Errorf("the replay called the HTTP tool")
	}
	// Reading the log needs no secret and starts no MCP server either.
	for _, args := range [][]string{{"sessions", "--config", cfg, "--db", db}, {"show", "--config", cfg, "--db", db, session}} {
		if out, err := run(exporting, args...); err != nil || !strings.Contains(out, session) {
			t.Errorf("%s without secrets or node: %v\n%s", args[0], err, out)
		}
	}
	// The whole log, against the config, its MCP tools from the snapshot: no server.
	if out, err := run(Wiring{Functions: demo.Functions()}, "replay", "--db", db, "--config", cfg, "--tools", filepath.Join(fixture, "tools.json")); err != nil ||
		!strings.Contains(out, "replayed 1 sessions") || !strings.Contains(out, ": 0 diverge") {
		t.Errorf("replay --db with the snapshot, without secrets or node: %v\n%s", err, out)
	}
	if calls.Load() != before {
		t.Errorf("replay --db called the HTTP tool")
	}
	t.Setenv("PATH", path)
	// ... or from the servers, asked now.
	if out, err := run(exporting, "replay", "--db", db, "--config", cfg, "--discover"); err != nil || !strings.Contains(out, ": 0 diverge") {
		t.Errorf("replay --db --discover: %v\n%s", err, out)
	}
	if out, err := run(exporting, "export", "--config", cfg, "--db", db, "--fixture", filepath.Join(dir, "fixture-nosecrets"), session); err != nil || !strings.Contains(out, "replay ok") {
		t.Errorf("export --fixture without the secrets: %v\n%s", err, out)
	}

	// The config changed since the recording: the export says where it diverges.
	for k, v := range map[string]string{"SHOP_OPENAI_KEY": "sk-live-s3cr3t", "SHOP_TOOL_SECRET": "a-signing-secret-s3cr3t", "SHOP_TOKEN": "tok-s3cr3t", "SHOP_HOOK_SECRET": "hook-secret-of-length-s3cr3t"} {
		t.Setenv(k, v)
	}
	changed, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(changed), "You refund orders.", "You refund orders, politely.", 1)), 0o644)
	out, err = run(exporting, "export", "--config", cfg, "--db", db, "--fixture", filepath.Join(dir, "fixture2"), session)
	if ExitCode(err) != 1 || !strings.Contains(out, "does not replay as recorded") || !strings.Contains(out, "clerk/model/1") {
		t.Fatalf("an export under a changed config: exit %d\n%s", ExitCode(err), out)
	}
}
