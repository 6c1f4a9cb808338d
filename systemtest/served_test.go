package systemtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// cannedOpenAI is a fake OpenAI server on loopback that answers its requests with
// replies in order (a request past them is a 400) and keeps every request body.
type cannedOpenAI struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newCannedOpenAI(t *testing.T, replies ...string) *cannedOpenAI {
	t.Helper()
	c := &cannedOpenAI{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		n := len(c.bodies)
		c.bodies = append(c.bodies, string(body))
		c.mu.Unlock()
		if n >= len(replies) {
			http.Error(w, `{"error":{"message":"unexpected request"}}`, 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, replies[n])
	}))
	t.Cleanup(c.Close)
	return c
}

// requests are the bodies the server received, in order.
func (c *cannedOpenAI) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bodies...)
}

// sawEachOnce fails t unless the server saw want requests, none repeated, the
// last carrying the output of the tool call callID.
func (c *cannedOpenAI) sawEachOnce(t *testing.T, want int, callID string) {
	t.Helper()
	bodies := c.requests()
	if len(bodies) != want || bodies[0] == bodies[len(bodies)-1] || !strings.Contains(bodies[len(bodies)-1], `"tool_call_id":"`+callID+`"`) {
		t.Fatalf("the provider saw %d requests (want %d, none repeated):\n%s", len(bodies), want, strings.Join(bodies, "\n"))
	}
}

// servedConfig is a turnlog serve child on one SQLite file with one agent.yaml, which
// a test starts, kills and starts again.
type servedConfig struct {
	t            *testing.T
	dir, db, cfg string
}

func newServedConfig(t *testing.T, yaml string) servedConfig {
	t.Helper()
	dir := t.TempDir()
	s := servedConfig{t: t, dir: dir, db: filepath.Join(dir, "turnlog.db"), cfg: filepath.Join(dir, "agent.yaml")}
	if err := os.WriteFile(s.cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// start serves the file; it returns the child and its base URL.
func (s servedConfig) start() (*exec.Cmd, string) { return serveChildOn(s.t, s.db, s.cfg, s.dir) }

// kill ends a child with SIGKILL.
func (s servedConfig) kill(cmd *exec.Cmd) {
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	cmd.Wait()
}

// call sends a JSON request and returns the answer's body, failing the test on a
// status of 300 or more.
func (s servedConfig) call(method, url, body string) string {
	s.t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		s.t.Fatalf("%s %s: %d %s", method, url, res.StatusCode, raw)
	}
	return string(raw)
}

// stop ends a child with SIGTERM and waits for it.
func (s servedConfig) stop(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
}
