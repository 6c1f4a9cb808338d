package systemtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedTypeScriptClient generates a TypeScript client from /openapi.yaml
// (openapi-typescript, pinned), type-checks the README's quickstart and approval
// written against it with openapi-fetch (tsc --strict: what the API takes and
// answers must be typed, and what it refuses must not type-check), then runs it
// against a served demo.
func TestGeneratedTypeScriptClient(t *testing.T) {
	t.Parallel()
	modules, _ := filepath.Abs(".ci/mcp/node_modules")
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(modules, "openapi-typescript", "package.json")); err != nil || statErr != nil {
		if os.Getenv("TURNLOG_REQUIRE_MCP") != "" {
			t.Fatalf("node and openapi-typescript are needed (.ci/install-mcp installs them): %v %v", err, statErr)
		}
		t.Skip("node or openapi-typescript is missing; run .ci/install-mcp")
	}
	dir := t.TempDir()
	for _, f := range []string{"quickstart.ts", "tsconfig.json", "package.json"} {
		raw, err := os.ReadFile(filepath.Join("httpapi", "testdata", "tsclient", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), raw, 0o644)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	step := func(what string, env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(node, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		return string(out)
	}
	spec, _ := filepath.Abs(filepath.Join("httpapi", "openapi.yaml"))
	step("generate", nil, "node_modules/openapi-typescript/bin/cli.js", spec, "-o", "schema.d.ts")
	step("type-check", nil, "node_modules/typescript/bin/tsc", "-p", ".")
	out := step("run", []string{"TURNLOG_URL=" + serveDemo(t)}, "out/quickstart.js")
	want := `session demo {"ticket":42}
turn completed: Order 42 is shipped (carrier DHL), expected on 2026-12-02.
calls lookup_order({"order_id":42})
events ModelCalled,ToolScheduled,ToolResulted,ModelCalled,TurnCommitted
waiting issue_refund {"order_id":42}
pending tool_approval:pending
status waiting
resumed completed: Refunded 58.40 EUR for order 42.
audit issue_refund approved by dev
`
	if out != want {
		t.Fatalf("the generated client's quickstart printed\n%s\nwant\n%s", out, want)
	}
	if strings.Contains(out, "undefined") {
		t.Fatal("a field the schema promised was missing")
	}
}
