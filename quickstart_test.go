package main

import (
	"bufio"
	"context"
	"io"
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

// TestReadmeQuickstart serves the demo exactly as `make run` does (dev mode, the
// default config) and runs the README's curl quickstart verbatim against it.
func TestReadmeQuickstart(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed to run the README quickstart")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	db := filepath.Join(t.TempDir(), "turnlog.db")
	go func() {
		done <- run(ctx, []string{"serve", "--dev", "--addr", "127.0.0.1:0", "--db", db}, io.Discard, pw)
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
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", quickstartBlock(t))
	cmd.Env = append(os.Environ(), "TURNLOG_URL="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart failed: %v\n%s", err, out)
	}
	for _, want := range []string{"session ", `"status":"completed"`, "Order 42 is shipped", `"type":"function_call_output"`, `"seq":3`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("quickstart output lacks %q:\n%s", want, out)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop on cancel")
	}
}
