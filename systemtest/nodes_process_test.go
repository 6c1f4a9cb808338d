package systemtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The multi-node tests run real turnlog processes — the binary built without the
// race detector — on one PostgreSQL database, kill or pause them, and read the
// database afterwards.

var (
	buildOnce  sync.Once
	builtPath  string
	builtError error
)

// turnlogBinary builds turnlog once for the tests that run it as real nodes.
func turnlogBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "turnlog-nodes-")
		if err != nil {
			builtError = err
			return
		}
		builtPath = filepath.Join(dir, "turnlog")
		out, err := exec.Command("go", "build", "-o", builtPath, ".").CombinedOutput()
		if err != nil {
			builtError = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if builtError != nil {
		t.Fatal(builtError)
	}
	return builtPath
}

// removeBuiltBinary removes what turnlogBinary built (TestMain calls it at the end).
func removeBuiltBinary() {
	if builtPath != "" {
		os.RemoveAll(filepath.Dir(builtPath))
	}
}

// cluster is a set of turnlog nodes on one database, each started the same way.
type cluster struct {
	t    testing.TB
	bin  string
	dir  string
	env  []string // TURNLOG_DB among them: the password is on no command line
	args []string

	mu    sync.Mutex
	nodes []*liveNode // by slot; a killed node's slot is refilled by restart
	runs  int
}

// liveNode is one turnlog process.
type liveNode struct {
	cmd  *exec.Cmd
	url  string
	log  string // its stderr
	done chan struct{}
}

func newCluster(t testing.TB, dir, dsn string, args ...string) *cluster {
	c := &cluster{t: t, bin: turnlogBinary(t), dir: dir, env: append(os.Environ(), "TURNLOG_DB="+dsn), args: args}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.nodes {
			if n != nil {
				n.cmd.Process.Kill()
				<-n.done
			}
		}
	})
	return c
}

// start starts a node in slot (appending a slot when slot is len(nodes)) and waits
// until it serves.
func (c *cluster) start(slot int) *liveNode {
	c.t.Helper()
	c.mu.Lock()
	c.runs++
	logPath := filepath.Join(c.dir, fmt.Sprintf("node%d-run%d.log", slot, c.runs))
	c.mu.Unlock()
	cmd := exec.Command(c.bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, c.args...)...)
	cmd.Env = c.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		c.t.Fatal(err)
	}
	n := &liveNode{cmd: cmd, log: logPath, done: make(chan struct{})}
	serving := make(chan string, 1)
	go func() {
		defer close(n.done)
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if _, rest, ok := strings.Cut(line, "turnlog: serving on "); ok {
				url, _, _ := strings.Cut(rest, " ")
				select {
				case serving <- url:
				default:
				}
			}
		}
		io.Copy(logFile, stderr)
		cmd.Wait()
	}()
	select {
	case n.url = <-serving:
	case <-n.done:
		c.t.Fatalf("node %d stopped before it served:\n%s", slot, readFile(logPath))
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		c.t.Fatalf("node %d never served:\n%s", slot, readFile(logPath))
	}
	c.mu.Lock()
	if slot == len(c.nodes) {
		c.nodes = append(c.nodes, n)
	} else {
		c.nodes[slot] = n
	}
	c.mu.Unlock()
	return n
}

// kill SIGKILLs the node in slot and waits until it is gone.
func (c *cluster) kill(slot int) {
	c.mu.Lock()
	n := c.nodes[slot]
	c.nodes[slot] = nil
	c.mu.Unlock()
	n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.done
}

// urls are the nodes that serve now.
func (c *cluster) urls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.nodes {
		if n != nil {
			out = append(out, n.url)
		}
	}
	return out
}

// logs are the tails of every node's stderr, for a failure's message.
func (c *cluster) logs() string {
	paths, _ := filepath.Glob(filepath.Join(c.dir, "node*.log"))
	var b strings.Builder
	for _, p := range paths {
		text := readFile(p)
		if len(text) > 3000 {
			text = "…" + text[len(text)-3000:]
		}
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(p), text)
	}
	return b.String()
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// apiCall is one request of a client of the cluster.
type apiCall struct {
	method, path, key string
	body              any
}

// send sends call to url as alice; status 0 is a request that got no answer (the
// node went away).
func (a apiCall) send(client *http.Client, url string) (int, map[string]any) {
	var body io.Reader
	if a.body != nil {
		raw, _ := json.Marshal(a.body)
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(a.method, url+a.path, body)
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer key-alice")
	req.Header.Set("Content-Type", "application/json")
	if a.key != "" {
		req.Header.Set("Idempotency-Key", a.key)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil // cut off mid-answer
	}
	var v map[string]any
	json.Unmarshal(raw, &v) // not every answer is a JSON object
	return res.StatusCode, v
}
