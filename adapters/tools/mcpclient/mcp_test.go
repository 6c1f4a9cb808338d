package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
	"github.com/turnlog/turnlog/policy"
)

// everythingDir is where .ci/run installs @modelcontextprotocol/server-everything (or
// TURNLOG_MCP_EVERYTHING). Without it the tests that need it are skipped — unless
// TURNLOG_REQUIRE_MCP is set, as CI sets it: then they fail.
func everythingDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TURNLOG_MCP_EVERYTHING")
	if dir == "" {
		dir, _ = filepath.Abs("../../../.ci/mcp")
	}
	if _, err := os.Stat(filepath.Join(dir, everythingJS)); err != nil {
		if os.Getenv("TURNLOG_REQUIRE_MCP") != "" {
			t.Fatalf("server-everything is not installed in %s (.ci/install-mcp installs it): %v", dir, err)
		}
		t.Skipf("server-everything is not installed in %s; run .ci/install-mcp", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node: %v", err)
	}
	return dir
}

const everythingJS = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// appYAML is an app whose scripted agent calls two MCP tools in one response and
// answers with both outputs.
func appYAML(server string) string {
	return `apps:
  a:
    start_agent: helper
    llms:
      m:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: "{{outputs}}"
          - when: {input: 'add (\d+) and (\d+)'}
            tools:
              - {name: everything__get-sum, arguments: '{"a": {{match.1}}, "b": {{match.2}}}'}
              - {name: everything__echo, arguments: '{"message": "hi"}'}
          - when: {input: 'env'}
            tools:
              - {name: everything__get-env, arguments: '{}'}
          - when: {input: 'try'}
            tools:
              - {name: local__fail, arguments: '{}'}
              - {name: local__big, arguments: '{}'}
    mcp:
      servers:
` + server + `
    agents:
      helper:
        llm: m
        tools: TOOLS
`
}

// engineFor loads the config (connecting to its servers) into an engine on a fresh
// store.
func engineFor(t *testing.T, yaml string) (*fsm.Engine, *sqlite.Store) {
	t.Helper()
	apps, err := turnlogtest.LoadApps(t, filepath.Join(t.TempDir(), "agent.yaml"), []byte(yaml), turnlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	var n atomic.Int64
	e, err := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: func() string { return fmt.Sprintf("id%04d", n.Add(1)) }})
	if err != nil {
		t.Fatal(err)
	}
	return e, store
}

// runTurn loads the config (connecting to its servers), runs one turn and returns
// the answer and the recorded tool results.
func runTurn(t *testing.T, yaml, input string) (string, map[string]*events.ToolResulted) {
	t.Helper()
	e, store := engineFor(t, yaml)
	ctx := context.Background()
	s, _ := e.CreateSession(ctx, "a", "alice", nil)
	res, err := e.RunTurn(ctx, s.ID, input)
	if err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	evs, _ := store.Events(ctx, s.ID, 0)
	results := map[string]*events.ToolResulted{}
	for _, ev := range evs {
		if ev.Type == events.TypeToolResulted {
			tr, _ := events.DecodeAs[*events.ToolResulted](ev)
			results[tr.Tool] = tr
		}
	}
	return res.Output, results
}

func checkEverything(t *testing.T, out string, results map[string]*events.ToolResulted) {
	t.Helper()
	if !strings.Contains(out, "The sum of 2 and 3 is 5.") || !strings.Contains(out, "Echo: hi") {
		t.Fatalf("answer: %s", out)
	}
	if len(results) != 2 || results["everything__get-sum"] == nil || results["everything__echo"] == nil || results["everything__echo"].IsError {
		t.Fatalf("recorded: %+v", results)
	}
}

// TestStdioServer: server-everything started over stdio, inside the sandbox (its
// environment holds none of turnlog's secrets); only the allowed tools are offered,
// and an agent turn calls two of them, recorded.
func TestStdioServer(t *testing.T) {
	dir := everythingDir(t)
	t.Setenv("OPENAI_API_KEY", "sk-live-never-shared")
	server := fmt.Sprintf(`        everything:
          command: [node, %s, stdio]
          dir: %s
          allowed_tools: [echo, get-sum]
          timeout_seconds: 20`, everythingJS, dir)
	yaml := strings.Replace(appYAML(server), "TOOLS", "[everything__get-sum, everything__echo]", 1)
	out, results := runTurn(t, yaml, "add 2 and 3")
	checkEverything(t, out, results)
	t.Setenv("SHOP_REGION", "eu-north")
	withEnv := strings.Replace(server, "[echo, get-sum]", "[echo, get-sum, get-env]\n          env: [SHOP_REGION, \"GREETING=hej\"]", 1)
	out, results = runTurn(t, strings.Replace(appYAML(withEnv), "TOOLS", "[everything__get-env]", 1), "env")
	if env := results["everything__get-env"]; env == nil || env.IsError || !strings.Contains(out, "PATH") || strings.Contains(out, "sk-live") ||
		!strings.Contains(out, "eu-north") || !strings.Contains(out, "hej") || !strings.Contains(out, "TURNLOG_DATA_DIR") {
		t.Fatalf("the stdio server's environment: %s", out)
	}
	notAllowed := strings.Replace(appYAML(server), "TOOLS", "[everything__get-env]", 1)
	if _, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(notAllowed), turnlog.Options{}); err == nil || !strings.Contains(err.Error(), `names no tool of this app ("everything__get-env")`) {
		t.Fatalf("a tool not in allowed_tools: %v", err)
	}
}

// TestStreamableHTTPServer: server-everything over streamable HTTP on loopback, behind
// a proxy that records the Authorization header: the bearer token comes from the
// environment variable the config names.
func TestStreamableHTTPServer(t *testing.T) {
	dir := everythingDir(t)
	target := startEverythingHTTP(t, dir)
	var mu sync.Mutex
	var auth []string
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	t.Setenv("EVERYTHING_TOKEN", "s3cret")
	server := fmt.Sprintf(`        everything:
          url: %s/mcp
          allowed_tools: [echo, get-sum]
          auth: {type: bearer_env, token_env: EVERYTHING_TOKEN}`, front.URL)
	out, results := runTurn(t, strings.Replace(appYAML(server), "TOOLS", "[everything__get-sum, everything__echo]", 1), "add 2 and 3")
	checkEverything(t, out, results)
	mu.Lock()
	defer mu.Unlock()
	for _, a := range auth {
		if a != "Bearer s3cret" {
			t.Fatalf("a request went without the token: %q", auth)
		}
	}
	if len(auth) < 3 {
		t.Fatalf("%d requests seen", len(auth))
	}
}

// TestUnreachableServerStopsTheStart: a URL nobody answers stops the load, naming
// the server.
func TestUnreachableServerStopsTheStart(t *testing.T) {
	t.Parallel()
	server := fmt.Sprintf("        down:\n          url: http://127.0.0.1:%d/mcp\n          timeout_seconds: 5", freePort(t))
	_, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(strings.Replace(appYAML(server), "TOOLS", "[]", 1)), turnlog.Options{})
	if err == nil || !strings.Contains(err.Error(), "apps.a.mcp.servers.down") || !strings.Contains(err.Error(), "mcp server down is unreachable") {
		t.Fatalf("%v", err)
	}
}

// TestErrorResultsAndBigIntegers: against an MCP server of our own (the Go SDK's, over
// streamable HTTP), an error result is a tool error the model sees, and a structured
// result with an integer beyond 2^53 fails the call saying so.
func TestErrorResultsAndBigIntegers(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "local", Version: "1"}, nil)
	empty := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: empty}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk full on /var"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "big", InputSchema: empty}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "n"}}, StructuredContent: json.RawMessage(`{"n":9007199254740993}`)}, nil
	})
	h := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer h.Close()
	yaml := strings.Replace(appYAML("        local:\n          url: "+h.URL), "TOOLS", "[local__fail, local__big]", 1)
	out, results := runTurn(t, yaml, "try")
	fail, big := results["local__fail"], results["local__big"]
	if fail == nil || !fail.IsError || !strings.Contains(fail.Output, `"message":"disk full on /var"`) || !strings.Contains(out, "disk full on /var") {
		t.Fatalf("error result: %+v; answer %s", fail, out)
	}
	if big == nil || !big.IsError || !strings.Contains(big.Output, "9007199254740993 is beyond ±2^53") {
		t.Fatalf("big integer: %+v", big)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startEverythingHTTP starts server-everything over streamable HTTP on a free
// loopback port and returns its URL once it listens. A port found free can be taken
// before the server binds it (other tests open thousands of connections): a server
// that exits before it listens is started again on another port.
func startEverythingHTTP(t *testing.T, dir string) *url.URL {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		port := freePort(t)
		cmd := exec.Command("node", everythingJS, "streamableHttp")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), fmt.Sprintf("PORT=%d", port))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-exited })
		target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if c, err := net.Dial("tcp", target.Host); err == nil {
				c.Close()
				return target
			}
			select {
			case <-exited: // the port was taken: another one
				deadline = time.Time{}
			case <-time.After(50 * time.Millisecond):
			}
		}
		select {
		case <-exited:
		default:
			t.Fatalf("nothing listens on %s", target.Host)
		}
	}
	t.Fatal("server-everything exited five times before it listened")
	return nil
}

// TestServerHintsRaiseThePolicy: what a server says of its tools can raise the
// policy's level — destructive is an L4 delete, open-world reaches the network — and
// never lower it: a read-only claim beside a destructive one stays an L4 delete.
func TestServerHintsRaiseThePolicy(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "local", Version: "1"}, nil)
	empty := json.RawMessage(`{"type":"object"}`)
	yes := true
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "wipe", InputSchema: empty, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, ok)
	srv.AddTool(&mcp.Tool{Name: "fetch", InputSchema: empty, Annotations: &mcp.ToolAnnotations{OpenWorldHint: &yes}}, ok)
	srv.AddTool(&mcp.Tool{Name: "peek", InputSchema: empty, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}}, ok)
	srv.AddTool(&mcp.Tool{Name: "plain", InputSchema: empty}, ok)
	h := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer h.Close()
	yaml := strings.Replace(appYAML("        local:\n          url: "+h.URL), "TOOLS", "[local__wipe, local__fetch, local__peek, local__plain]", 1)
	yaml = strings.Replace(yaml, "    mcp:\n", "    policy:\n      mode: workspace-write\n    mcp:\n", 1)
	apps, err := turnlogtest.LoadApps(t, filepath.Join(t.TempDir(), "agent.yaml"), []byte(yaml), turnlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"local__wipe": "L4 execute,delete", "local__fetch": "L3 execute,network", "local__peek": "L4 execute,delete", "local__plain": "L2 execute"} {
		var tool fsm.Tool
		for _, tl := range apps[0].Agents["helper"].Tools {
			if tl.Spec().Name == name {
				tool = tl
			}
		}
		call := tool.(fsm.PolicyTarget).PolicyCall(nil)
		var actions []string
		for _, a := range call.Actions {
			actions = append(actions, string(a))
		}
		if got := call.Level.String() + " " + strings.Join(actions, ","); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
		wantDecision := policy.RequireApproval
		if name == "local__plain" {
			wantDecision = policy.Allow
		}
		if v := apps[0].ToolPolicy.Tool(policy.Subject{Agent: "helper", Tool: name}, call.Level, call.Actions, nil); v.Decision != wantDecision {
			t.Errorf("%s: the policy says %s, want %s", name, v.Decision, wantDecision)
		}
	}
}

// TestCancelReachesAnMCPCall: canceling a turn while an MCP tool runs sends the
// protocol's notifications/cancelled — the server's handler sees its context end —
// and the call is recorded as canceled.
func TestCancelReachesAnMCPCall(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "local", Version: "1"}, nil)
	entered, serverSawCancel := make(chan struct{}), make(chan struct{})
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(entered)
		select {
		case <-ctx.Done():
			close(serverSawCancel)
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "too late"}}}, nil
		}
	})
	h := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer h.Close()
	yaml := strings.Replace(appYAML("        local:\n          url: "+h.URL), "TOOLS", "[local__wait]", 1)
	yaml = strings.Replace(yaml, "          - when: {input: 'env'}", "          - when: {input: 'wait'}\n            tools: [{name: local__wait, arguments: '{}'}]\n          - when: {input: 'env'}", 1)
	e, store := engineFor(t, yaml)
	ctx := context.Background()
	s, _ := e.CreateSession(ctx, "a", "u", nil)
	done := make(chan *fsm.Result, 1)
	go func() {
		res, _ := e.RunTurn(ctx, s.ID, "wait")
		done <- res
	}()
	<-entered
	running, _ := store.RunningTurns(ctx)
	if _, err := e.Cancel(ctx, s.ID, running[0].ID, "no longer needed"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-serverSawCancel:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never heard of the cancel")
	}
	if res := <-done; res.Error == nil || res.Error.Code != events.CodeCanceled {
		t.Fatalf("result = %+v", res)
	}
	evs, _ := store.Events(ctx, s.ID, 0)
	for _, ev := range evs {
		if ev.Type == events.TypeToolResulted {
			if tr, _ := events.DecodeAs[*events.ToolResulted](ev); tr.ErrorKind != fsm.ToolErrCanceled {
				t.Fatalf("the MCP call was recorded as %+v", tr)
			}
			return
		}
	}
	t.Fatal("no result recorded for the MCP call")
}

// TestServersWriteTheirOwnData: @modelcontextprotocol/server-memory and
// server-filesystem, run as stdio servers in the sandbox, write to the data
// directory turnlog gives each (read-only everywhere else), and what they wrote is
// there after a restart; a server gets only the environment its config names.
func TestServersWriteTheirOwnData(t *testing.T) {
	dir := everythingDir(t)
	state := t.TempDir()
	t.Setenv("MEMORY_NOTE", "from turnlog's environment")
	yaml := fmt.Sprintf(`apps:
  a:
    start_agent: helper
    llms:
      m:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: "{{outputs}}"
          - when: {input: '^remember'}
            tools: [{name: memory__create_entities, arguments: '{"entities": [{"name": "ana", "entityType": "person", "observations": ["likes tea"]}]}'}]
          - when: {input: '^recall'}
            tools: [{name: memory__read_graph, arguments: '{}'}]
          - when: {input: '^write'}
            tools: [{name: files__write_file, arguments: '{"path": "%[2]s/mcp/a/files/note.txt", "content": "hello from the sandbox"}'}]
    mcp:
      servers:
        memory:
          command: [node, node_modules/@modelcontextprotocol/server-memory/dist/index.js]
          dir: %[1]s
          env: ["MEMORY_FILE_PATH=${data_dir}/memory.jsonl", MEMORY_NOTE]
          allowed_tools: [create_entities, read_graph]
          timeout_seconds: 20
        files:
          command: [node, node_modules/@modelcontextprotocol/server-filesystem/dist/index.js, "${data_dir}"]
          dir: %[1]s
          allowed_tools: [write_file]
          timeout: 20s
    agents:
      helper:
        llm: m
        tools: [memory__create_entities, memory__read_graph, files__write_file]
`, dir, state)
	turn := func(input string) string {
		apps, err := turnlogtest.LoadApps(t, filepath.Join(t.TempDir(), "agent.yaml"), []byte(yaml), turnlog.Options{StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
		e, err := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: turnlog.NewULIDs()})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := e.CreateSession(context.Background(), "a", "u", nil)
		res, err := e.RunTurn(context.Background(), s.ID, input)
		if err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("%s: %+v %v", input, res, err)
		}
		return res.Output
	}
	if out := turn("remember ana"); strings.Contains(out, "error") || strings.Contains(out, "EROFS") {
		t.Fatalf("create_entities: %s", out)
	}
	if out := turn("write a note"); strings.Contains(out, "error") || strings.Contains(out, "EROFS") {
		t.Fatalf("write_file: %s", out)
	}
	raw, err := os.ReadFile(filepath.Join(state, "mcp", "a", "memory", "memory.jsonl"))
	if err != nil || !strings.Contains(string(raw), "likes tea") {
		t.Fatalf("server-memory's file on the host: %q %v", raw, err)
	}
	if raw, err := os.ReadFile(filepath.Join(state, "mcp", "a", "files", "note.txt")); err != nil || string(raw) != "hello from the sandbox" {
		t.Fatalf("server-filesystem's file on the host: %q %v", raw, err)
	}
	if out := turn("recall ana"); !strings.Contains(out, "likes tea") { // a new process's worth of servers
		t.Fatalf("after a restart: %s", out)
	}
}
