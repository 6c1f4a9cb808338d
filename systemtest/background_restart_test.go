package systemtest

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveChild starts a real turnlog serving the crash bundle's config and database,
// and returns it with its base URL.
func (b crashBundle) serveChild(t *testing.T) (*exec.Cmd, string) {
	t.Helper()
	return serveChildOn(t, b.db, b.cfg, b.dir)
}

// serveChildOn starts this test binary as turnlog serving cfg on db (dir holds the
// crash wiring's counters and gates), on a free loopback port.
func serveChildOn(t *testing.T, db, cfg, dir string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--db", db, "--config", cfg}, extra...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "CRASH_DIR="+dir)
	if len(extra) > 0 { // a child told how to stop stops as turnlog does on SIGTERM
		cmd.Env = append(cmd.Env, "CRASH_GRACEFUL=1")
	}
	return cmd, startServing(t, cmd)
}

// startServing starts a serving child and returns its base URL once it serves.
func startServing(t testing.TB, cmd *exec.Cmd) string {
	t.Helper()
	stderr, w := io.Pipe() // read here, so Wait never races a reader of StderrPipe
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := regexp.MustCompile(`serving on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return m[1]
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatal("the server did not start")
	return ""
}

// callServer sends one request to a serving child and returns the answer's body.
func callServer(t *testing.T, method, url, body string) string {
	t.Helper()
	_, raw := request(t, method, url, body)
	return raw
}

// request sends one request and returns the status and body.
func request(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// TestBackgroundTurnSurvivesARestart: a background turn whose tool is running when a
// real turnlog is SIGKILLed is recovered by the next start on the same file; its turn
// resource then says completed.
func TestBackgroundTurnSurvivesARestart(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	b.gate(t, "counted_read", true)
	cmd, base := b.serveChild(t)
	call := func(method, url, body string) string { return callServer(t, method, url, body) }
	session := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(call("POST", base+"/v1/sessions", `{"app":"crash"}`))[1]
	accepted := call("POST", base+"/v1/sessions/"+session+"/turns", `{"input":"read it","background":true}`)
	loc := regexp.MustCompile(`"location":"([^"]+)"`).FindStringSubmatch(accepted)
	if loc == nil {
		t.Fatalf("background: %s", accepted)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(b.count("counted_read")) == 0 { // the tool runs, held by its gate
		if time.Now().After(deadline) {
			t.Fatal("the tool never ran")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	b.gate(t, "counted_read", false)
	cmd, base = b.serveChild(t)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if turn := call("GET", base+loc[1]+"?wait=30s", ""); !strings.Contains(turn, `"status":"completed"`) || !strings.Contains(turn, "read done") {
		t.Fatalf("after the restart: %s", turn)
	}
}
