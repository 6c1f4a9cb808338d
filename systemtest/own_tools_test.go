package systemtest

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/httptool"
)

const httpToolsConfig = `
apps:
  shop:
    start_agent: clerk
    llms:
      script:
        provider: scripted
        rules:
%s          - reply: "hello"
    tools:
%s    agents:
      clerk: {llm: script, tools: [%s]}
`

// httpToolsApp writes an app whose model calls tool NAME when the input is NAME and
// answers with the tool's output.
func httpToolsApp(t *testing.T, dir string, tools map[string]string) string {
	t.Helper()
	var rules, decls, names []string
	for _, name := range sortedNames(tools) {
		rules = append(rules, fmt.Sprintf("          - when: {after_tool: %s}\n            reply: \"%s said: {{output}}\"\n          - when: {input: '^%s$'}\n            tools: [{name: %s, arguments: '{\"order_id\": 42}'}]\n", name, name, name, name))
		decls = append(decls, fmt.Sprintf("      %s: %s\n", name, tools[name]))
		names = append(names, name)
	}
	cfg := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(httpToolsConfig, strings.Join(rules, ""), strings.Join(decls, ""), strings.Join(names, ", "))), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func sortedNames(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestHTTPToolsInATurn: each answer class, as the model sees it in a real turn.
func TestHTTPToolsInATurn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"got": %s, "status": "refunded"}`, body)
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "refund queued")
		case "/huge":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id": 9007199254740993}`)
		case "/missing":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			io.WriteString(w, `{"error": "order 42 is not ours"}`)
		default:
			http.Error(w, "database on fire", 500)
		}
	}))
	defer srv.Close()
	decl := func(path, extra string) string {
		return fmt.Sprintf(`{url: "%s%s", description: "refund an order", parameters: {type: object, properties: {order_id: {type: integer}}, required: [order_id]}%s}`, srv.URL, path, extra)
	}
	dir := t.TempDir()
	cfg := httpToolsApp(t, dir, map[string]string{
		"as_json": decl("/json", ""), "as_text": decl("/text", ""), "huge_number": decl("/huge", ""),
		"missing": decl("/missing", ""), "broken": decl("/broken", ""), "broken_shown": decl("/broken", ", show_errors: true"),
	})
	db := filepath.Join(dir, "t.db")
	for input, want := range map[string]string{
		"as_json":      `as_json said: {"got":{"order_id":42},"status":"refunded"}`,
		"as_text":      `as_text said: refund queued`,
		"huge_number":  `"kind":"invalid_output","message":"canonical json: $.id: integer 9007199254740993 is beyond ±2^53`,
		"missing":      `"kind":"failed","message":"HTTP 404: order 42 is not ours"`,
		"broken":       `"kind":"outcome_unknown","message":"the tool's outcome is unknown: it may have acted`,
		"broken_shown": `"message":"HTTP 500: database on fire: the outcome is unknown: the receiver may have acted`,
	} {
		out, errOut, err := runCLI(t, "run", "--config", cfg, "--app", "shop", "--db", db, input)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("%s: %v\n%s%s\nwant %s", input, err, out, errOut, want)
		}
	}
}

// TestHTTPToolExactlyOnceAcrossACrash: a receiver that applies each Idempotency-Key
// once; turnlog is SIGKILLed after ToolScheduled, while the receiver holds the first
// delivery (already applied), and again while it holds the second, which the first
// recovery sent; restarted once more on the same file, turnlog sends the call again
// with the same key and the turn completes: applied once, delivered three times, the
// attempt counting on (Turnlog-Attempt 1, 5, 9) and both recoveries in the audit.
func TestHTTPToolExactlyOnceAcrossACrash(t *testing.T) {
	secret := "a-signing-secret-of-some-length"
	t.Setenv("SHOP_TOOL_SECRET", secret)
	var mu sync.Mutex
	type delivery struct{ key, sig, attempt string }
	var deliveries []delivery
	applied := map[string]string{} // key → the answer it got
	effects := 0
	firstHeld, secondHeld := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := httptool.Verify([][]byte{[]byte(secret)}, r.Header, r.Method, r.URL.RequestURI(), body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		deliveries = append(deliveries, delivery{key, r.Header.Get("Turnlog-Signature"), r.Header.Get("Turnlog-Attempt")})
		answer, seen := applied[key]
		if !seen {
			effects++
			answer = fmt.Sprintf(`{"refund": "R-%d"}`, effects)
			applied[key] = answer
		}
		n := len(deliveries)
		mu.Unlock()
		if n <= 2 {
			close(map[int]chan struct{}{1: firstHeld, 2: secondHeld}[n])
			select { // the effect is applied; turnlog dies before it hears of it
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	defer close(release)

	b := setupCrash(t)
	cfg := strings.Replace(crashConfig, "          - reply: \"hello\"", `          - when: {after_tool: refund}
            reply: "refund done: {{output.refund}}"
          - when: {input: "^refund"}
            tools: [{name: refund, arguments: '{"order_id": 42}'}]
          - reply: "hello"`, 1)
	cfg = strings.Replace(cfg, "    tools:\n", fmt.Sprintf("    tools:\n      refund: {url: \"%s/refund\", description: refund an order, dedupe: idempotency_key, secret_env: SHOP_TOOL_SECRET, parameters: {type: object, properties: {order_id: {type: integer}}}}\n", srv.URL), 1)
	cfg = strings.Replace(cfg, "tools: [counted_write, counted_read]", "tools: [counted_write, counted_read, refund]", 1)
	if err := os.WriteFile(b.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	b.committedFirstTurn(t)
	b.crashAt(t, "refund it", func() bool {
		select {
		case <-firstHeld:
			return true
		default:
			return false
		}
	})
	if evs := b.eventTypes(t); !contains(evs, "ToolScheduled:worker/tool/call_3_1") || contains(evs, "ToolResulted:worker/tool/call_3_1") {
		t.Fatalf("kill point: log = %v", evs)
	}
	b.crashAt(t, "", func() bool { // the recovery alone, killed while the resend is held
		select {
		case <-secondHeld:
			return true
		default:
			return false
		}
	})
	out := b.restart(t)
	if !strings.Contains(out, "completed: refund done: R-1") {
		t.Fatalf("restart output: %s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deliveries) != 3 || deliveries[0].key != deliveries[1].key || deliveries[1].key != deliveries[2].key || effects != 1 {
		t.Fatalf("deliveries %v, effects %d: want the same key three times, applied once", deliveries, effects)
	}
	if got := []string{deliveries[0].attempt, deliveries[1].attempt, deliveries[2].attempt}; strings.Join(got, ",") != "1,5,9" {
		t.Errorf("Turnlog-Attempt of the deliveries: %v, want 1,5,9 (counting on after each recovery)", got)
	}
	b.after(t, "completed", "")
	b.recovered(t, `attempt 2: replayed 1; resent ["worker/tool/call_3_1"]`, `attempt 3: replayed 1; resent ["worker/tool/call_3_1"]`)
	db, _ := sql.Open("sqlite", "file:"+b.db+"?mode=ro")
	defer db.Close()
	var output string
	if err := db.QueryRow(`SELECT json_extract(data, '$.output') FROM events WHERE type = 'ToolResulted' AND path = 'worker/tool/call_3_1'`).Scan(&output); err != nil || output != `{"refund":"R-1"}` {
		t.Fatalf("recorded output %q, %v", output, err)
	}
}

const summarizePy = `import json, os, sys
args = json.load(sys.stdin)
if args.get("fail"):
    print("cannot summarize: " + args["text"], file=sys.stderr)
    sys.exit(3)
if args.get("plain"):
    print("a summary in words")
    sys.exit(0)
seen = {}
for name, path in (("config", sys.argv[1]), ("db", sys.argv[2])):
    try:
        open(path).read(1)
        seen[name] = "read"
    except OSError as e:
        seen[name] = type(e).__name__
try:
    open("scratch.txt", "w").write("x")
    seen["own_folder"] = "written"
except OSError as e:
    seen["own_folder"] = type(e).__name__
seen["secret"] = os.environ.get("SHOP_SECRET", "unset")
seen["given"] = os.environ.get("SHOP_REGION", "unset")
print(json.dumps({"words": len(args["text"].split()), "seen": seen}))
`

// TestCommandToolInTheSandbox: a Python script as a tool — arguments on stdin, JSON
// or text on stdout, a failing exit is a tool error with stderr's tail — run in the
// sandbox: it reads its own folder, cannot write it, and never sees the config, the
// database or a variable its config does not name.
func TestCommandToolInTheSandbox(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
	os.WriteFile(filepath.Join(dir, "tools", "summarize.py"), []byte(summarizePy), 0o644)
	cfg := filepath.Join(dir, "agent.yaml")
	db := filepath.Join(dir, "t.db")
	t.Setenv("SHOP_SECRET", "s3cr3t") // in turnlog's environment, never named by the tool
	t.Setenv("SHOP_REGION", "eu")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`apps:
  shop:
    start_agent: clerk
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: summarize}
            reply: "summary: {{output}}"
          - when: {input: '^sum (\w+) (.+)'}
            tools: [{name: summarize, arguments: '{"text": "{{match.2}}", "{{match.1}}": true}'}]
          - reply: hello
    tools:
      summarize:
        command: [python3, tools/summarize.py, %q, %q]
        description: Count the words of a text
        env: [SHOP_REGION]
        show_errors: true
        parameters: {type: object, properties: {text: {type: string}, fail: {type: boolean}, plain: {type: boolean}, json: {type: boolean}}, required: [text]}
    agents:
      clerk: {llm: script, tools: [summarize]}
    policy:
      mode: workspace-write
      workspace: %s
`, cfg, db, filepath.Join(dir, "ws"))), 0o644)
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	for input, want := range map[string]string{
		"sum json three little words": `summary: {"seen":{"config":"FileNotFoundError","db":"FileNotFoundError","given":"eu","own_folder":"OSError","secret":"unset"},"words":3}`,
		"sum plain some words":        "summary: a summary in words\n",
		"sum fail this text":          `"kind":"failed","message":"the program exited with status 3: cannot summarize: this text"`,
	} {
		out, errOut, err := runCLI(t, "run", "--config", cfg, "--app", "shop", "--db", db, input)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("%s: %v\n%s%s\nwant %s", input, err, out, errOut, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "tools", "scratch.txt")); err == nil {
		t.Fatal("the tool wrote into its folder")
	}
	os.WriteFile(filepath.Join(dir, "summarize.py"), []byte(summarizePy), 0o644)
	raw, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(raw), "tools/summarize.py", "summarize.py", 1)), 0o644)
	if _, _, err := runCLI(t, "run", "--config", cfg, "--app", "shop", "--db", db, "hi"); err == nil || !strings.Contains(err.Error(), "holds the config") {
		t.Fatalf("a tool in the config's folder: %v", err)
	}
}
