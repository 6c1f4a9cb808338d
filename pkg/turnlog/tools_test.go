package turnlog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

func toolConfig(decl string) string {
	return `apps:
  a:
    start_agent: main
    llms:
      m: {provider: scripted, rules: [{reply: hi}]}
    tools:
      t: ` + decl + `
    agents:
      main: {llm: m, tools: [t]}
`
}

// TestOwnToolErrorsNameTheField: every mistake in an HTTP or command tool is refused
// at load with the file, line and field.
func TestOwnToolErrorsNameTheField(t *testing.T) {
	t.Setenv("TOOL_SECRET_SHORT", "short")
	t.Setenv("TOOL_TOKEN", "tok")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "schema.json"), []byte(`{"type": "object"`), 0o644)
	cases := map[string]string{
		`{url: "http://127.0.0.1:1/x"}`:                                                   "apps.a.tools.t.description: is required",
		`{url: "ftp://127.0.0.1/x", description: d}`:                                      "apps.a.tools.t.url: an http or https URL is required",
		`{url: "http://127.0.0.1:1/x", description: d, function: ping}`:                   "apps.a.tools.t: a tool is one of function, url or command",
		`{url: "http://127.0.0.1:1/x", description: d, dedupe: yes}`:                      `apps.a.tools.t.dedupe: unknown value "yes" (one of idempotency_key)`,
		`{url: "http://127.0.0.1:1/x", description: d, max_attempts: 3}`:                  "apps.a.tools.t.max_attempts: a call is sent more than once only for a tool that is idempotent",
		`{url: "http://127.0.0.1:1/x", description: d, headers: {X-Key: "${TOOL_NOPE}"}}`: "apps.a.tools.t.headers.X-Key: environment variable TOOL_NOPE is empty",
		`{url: "http://127.0.0.1:1/x", description: d, headers: {Idempotency-Key: "k"}}`:  "apps.a.tools.t.headers.Idempotency-Key: turnlog sets this header itself",
		`{url: "http://127.0.0.1:1/x", description: d, secret_env: TOOL_SECRET_SHORT}`:    "apps.a.tools.t.secret_env: environment variable TOOL_SECRET_SHORT must hold a secret of at least 16 bytes",
		`{url: "http://127.0.0.1:1/x", description: d, next_secret_env: TOOL_TOKEN}`:      "next_secret_env",
		`{url: "http://127.0.0.1:1/x", description: d, timeout: soon}`:                    `apps.a.tools.t.timeout: must be a positive duration such as 30s, 10m or 1h30m, got "soon"`,
		`{url: "http://127.0.0.1:1/x", description: d, parameters: {type: string}}`:       `apps.a.tools.t.parameters: the arguments are an object`,
		`{url: "http://127.0.0.1:1/x", description: d, parameters: schema.json}`:          "apps.a.tools.t.parameters: the schema file schema.json is not JSON",
		`{url: "http://127.0.0.1:1/x", description: d, parameters: missing.json}`:         "apps.a.tools.t.parameters: the schema file",
		`{url: "http://127.0.0.1:1/x", description: d, dir: tools}`:                       "apps.a.tools.t.dir: is for command tools",
		`{url: "http://127.0.0.1:1/x", description: d, expires_in: 1h}`:                   "apps.a.tools.t.expires_in: goes only with needs_approval: true",
		`{url: "http://127.0.0.1:1/x", description: d, temperature: 1}`:                   `apps.a.tools.t.temperature: is not a known key here`,
		`{function: ping, description: d}`:                                                "apps.a.tools.t.description: is for HTTP (url) or command tools",
		`{function: nope}`:                                                                `apps.a.tools.t.function: no function tool "nope" in this binary (known: ping); a tool of your own can be an HTTP endpoint (url:) or a program (command:)`,
		`{command: [python3, x.py], description: d, dedupe: idempotency_key}`:             "apps.a.tools.t.dedupe: is for HTTP (url) tools",
		`{command: [python3, x.py]}`:                                                      "apps.a.tools.t.description: is required",
		`{command: [python3, ""], description: d}`:                                        "apps.a.tools.t.command[1]: is empty",
		`{command: [python3], description: d, env: ["A=B"]}`:                              `apps.a.tools.t.env[0]: "A=B" is not a variable a tool may be given`,
		`{command: [python3], description: d, env: [TURNLOG_SANDBOX_SPEC]}`:               `apps.a.tools.t.env[0]: "TURNLOG_SANDBOX_SPEC" is not a variable`,
		`{command: [python3], description: d, dir: nowhere}`:                              "apps.a.tools.t.dir: the tool's folder",
		`{command: [python3], description: d, dir: .}`:                                    "holds the config",
	}
	for decl, want := range cases {
		path := filepath.Join(dir, "agent.yaml")
		os.WriteFile(path, []byte(toolConfig(decl)), 0o644)
		_, err := turnlogtest.LoadFile(t, path, turnlog.Options{Functions: functions()})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s", decl, err, want)
			continue
		}
		if !strings.Contains(err.Error(), path+":7:") && !strings.Contains(err.Error(), "[7:") {
			t.Errorf("%s: %v does not name the file and line", decl, err)
		}
	}
}

// TestHTTPToolSettings: what agent.yaml says reaches the tool's spec.
func TestHTTPToolSettings(t *testing.T) {
	t.Setenv("TOOL_SECRET", "0123456789abcdef0123")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "schema.json"), []byte(`{"type": "object", "properties": {"q": {"type": "string"}}}`), 0o644)
	path := filepath.Join(dir, "agent.yaml")
	os.WriteFile(path, []byte(toolConfig(`{url: "http://127.0.0.1:1/x", description: look up, parameters: schema.json, secret_env: TOOL_SECRET, dedupe: idempotency_key, timeout: 5s, total_timeout: 30s, needs_approval: true, expires_in: 1h, max_calls: 2}`)), 0o644)
	apps, err := turnlogtest.LoadFile(t, path, turnlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := apps[0].Agents["main"].Tools[0].Spec()
	if spec.Name != "t" || spec.Description != "look up" || string(spec.Parameters) != `{"properties":{"q":{"type":"string"}},"type":"object"}` ||
		!spec.Idempotent || spec.Timeout.String() != "30s" || !spec.NeedsApproval || spec.ExpiresIn.String() != "1h0m0s" || spec.MaxCalls != 2 {
		t.Fatalf("spec = %+v", spec)
	}
}

// TestProgramsStayOutOfWorkspaces: a command tool whose folder lies in the app's
// workspace (where agents' file tools write), or holds it, is refused at load.
func TestProgramsStayOutOfWorkspaces(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "tools"), 0o755)
	os.WriteFile(filepath.Join(ws, "tools", "lint.py"), []byte("print(1)\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "progs"), 0o755)
	os.WriteFile(filepath.Join(dir, "progs", "ok.py"), []byte("print(1)\n"), 0o644)
	for decl, want := range map[string]string{
		`{command: [python3, ws/tools/lint.py], description: d}`: "apps.a.tools.t.command: the tool's folder " + filepath.Join(ws, "tools") + " overlaps the app's workspace",
		`{command: [python3], dir: ., description: d}`:           "holds the config",
		`{command: [python3, progs/ok.py], description: d}`:      "",
	} {
		src := strings.Replace(toolConfig(decl), "    agents:\n", "    policy: {mode: workspace-write, workspace: "+ws+", workspace_scope: shared}\n    agents:\n", 1)
		src = strings.Replace(src, "tools: [t]}", "tools: [t, read_file]}", 1)
		path := filepath.Join(dir, "agent.yaml")
		os.WriteFile(path, []byte(src), 0o644)
		_, err := turnlogtest.LoadFile(t, path, turnlog.Options{})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", decl, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s:\n got %v\nwant %s", decl, err, want)
		}
	}
}

// TestServerNamesMakeNoPaths: an MCP server's (or app's) name is part of its data
// directory's path: one that could leave <state dir>/mcp is refused before anything
// is made.
func TestServerNamesMakeNoPaths(t *testing.T) {
	state := t.TempDir()
	for _, name := range []string{`"../.."`, `"a/b"`, `".hidden"`} {
		src := strings.Replace(toolConfig(`{url: "http://127.0.0.1:1/x", description: d}`), "    agents:\n",
			"    mcp:\n      servers:\n        "+name+": {command: [\"true\"]}\n    agents:\n", 1)
		_, err := turnlogtest.LoadApps(t, filepath.Join(t.TempDir(), "agent.yaml"), []byte(src), turnlog.Options{StateDir: state})
		if err == nil || !strings.Contains(err.Error(), "letters, digits, - and _ only") {
			t.Errorf("server %s: %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Fatalf("the state directory got %v", entries)
	}
}

// TestOnBusyIsChecked: an app's on_busy is one of the modes, and reaches the app.
func TestOnBusyIsChecked(t *testing.T) {
	src := strings.Replace(toolConfig(`{function: ping}`), "    agents:\n", "    on_busy: enqueue\n    agents:\n", 1)
	apps, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(src), turnlog.Options{Functions: functions()})
	if err != nil || apps[0].OnBusy != "enqueue" {
		t.Fatalf("on_busy: enqueue: %v", err)
	}
	bad := strings.Replace(src, "on_busy: enqueue", "on_busy: later", 1)
	if _, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(bad), turnlog.Options{Functions: functions()}); err == nil || !strings.Contains(err.Error(), `apps.a.on_busy: unknown value "later" (one of reject, enqueue, interrupt)`) {
		t.Fatalf("on_busy: later: %v", err)
	}
}
