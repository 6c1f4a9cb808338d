package systemtest

import (
	"bufio"
	"context"
	"github.com/turnlog/turnlog/cli"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// quickstartBlock returns the first ```sh block after the "## Quickstart" heading.
func quickstartBlock(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Quickstart")
	if !ok {
		t.Fatal("README has no Quickstart section")
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(rest)
	if m == nil {
		t.Fatal("Quickstart has no sh block")
	}
	return m[1]
}

// serveDemo serves the demo exactly as `make run` does (dev mode, the default config)
// on a free loopback port and returns its URL; the server stops with the test.
func serveDemo(t *testing.T) string {
	t.Helper()
	return serveWith(t, "--dev")
}

// serveWith runs turnlog serve with args on a loopback port and a fresh database
// until the test ends, and returns its address.
func serveWith(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	db := filepath.Join(t.TempDir(), "turnlog.db")
	go func() {
		done <- cli.Run(ctx, append(append([]string{"serve"}, args...), "--addr", "127.0.0.1:0", "--db", db), io.Discard, pw)
		pw.Close()
	}()
	addr := ""
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if addr == "" {
		t.Fatalf("server did not start: %v", <-done)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop on cancel")
		}
	})
	return addr
}

func runScript(t *testing.T, addr, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "TURNLOG_URL="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	return string(out)
}

// TestReadmeQuickstart runs the README's curl quickstart verbatim against the demo
// server, then its approval example: the refund waits, the interrupt id is read from
// the interrupts, and the approval completes the turn.
func TestReadmeQuickstart(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed to run the README quickstart")
	}
	readme, _ := os.ReadFile("README.md")
	_, approval, ok := strings.Cut(string(readme), "**Approve a tool call.**")
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(approval)
	if !ok || m == nil {
		t.Fatal("the README's Quickstart has no approval block")
	}
	out := runScript(t, serveDemo(t), quickstartBlock(t)+m[1])
	for _, want := range []string{"session ", `"status":"completed"`, "Order 42 is shipped", `"type":"function_call_output"`, `"seq":3`,
		`"status":"suspended"`, "Refunded 58.40 EUR for order 42."} {
		if !strings.Contains(out, want) {
			t.Fatalf("quickstart output lacks %q:\n%s", want, out)
		}
	}
}

// TestAPIExamples runs every curl example of docs/api.md, in order, with the same
// script an operator runs (`make api-examples`).
func TestAPIExamples(t *testing.T) {
	t.Parallel()
	out := runScript(t, serveDemo(t), "bash scripts/api-examples.sh")
	for _, want := range []string{`"status":"ok"`, `"status":"ready"`, "openapi: 3.1", "turnlog_", "session ", `"sessions":[`,
		"turn ", "event: turn_committed", "Refundable: true", `"turns":[`, "cancel of an ended turn: 409", `"interrupts":[]`,
		"id: 11", `"branch_points":[`, "branch ", "Order 7 is processing", `"type":"SessionCreated"`, "interrupt int_", `"kind":"tool_approval"`, "Refunded 58.40 EUR for order 42.",
		"with the key [REDACTED:api-keys].", `"audit":[`, `"grants":[]`, "revoke a grant the session never had: 404", `"code":"policy_denied"`, "guardrail policy rule injection", `"type":"context_summary"`, "compact again at once: 409",
		`"calls":[]`, "revert in an app without a workspace: 409", "back to a turn without a workspace: 409", "undo a revert that was never made: 409",
		"a delivery that does not exist: 404", "redeliver one that does not exist: 404", `"kind":"user"`, "erase a session with branches: 409", `"kind":"session"`, "the erased session: 404", `"erasures":[{`, "every docs/api.md example ran green"} {
		if !strings.Contains(out, want) {
			t.Fatalf("docs/api.md examples' output lacks %q:\n%s", want, out)
		}
	}
}

// TestTheReadmesOpenAICommandServes: the README's command for a real model starts a
// server (with a key in OPENAI_API_KEY; no model is called until a turn runs).
func TestTheReadmesOpenAICommandServes(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`OPENAI_API_KEY=sk-\\.\\.\\. \\./turnlog serve ([^`]+)`").FindStringSubmatch(string(raw))
	if m == nil {
		t.Fatal("the README has no OpenAI command")
	}
	t.Setenv("OPENAI_API_KEY", "sk-not-a-real-key")
	addr := serveWith(t, strings.Fields(m[1])...)
	res, err := http.Get(addr + "/readyz")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the README's OpenAI command: %v %v", res, err)
	}
	res.Body.Close()
}
