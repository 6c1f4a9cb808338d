package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sseClientJS drives the npm eventsource package (a standard EventSource, which
// reconnects on its own with Last-Event-ID): its fetch sends the turn's request — the
// same body and Idempotency-Key every time it connects — and it prints each event.
const sseClientJS = `import {EventSource} from %q
const [url, key] = process.argv.slice(2)
const body = JSON.stringify({input: 'go', stream: true})
let opens = 0
const es = new EventSource(url, {
  fetch: (input, init) => {
    opens++
    return fetch(input, {...init, method: 'POST', body,
      headers: {...init.headers, 'Content-Type': 'application/json', 'Authorization': 'Bearer key-alice', 'Idempotency-Key': key}})
  },
})
for (const name of ['turn_started', 'tool_call', 'tool_result', 'text_delta', 'turn_committed']) {
  es.addEventListener(name, (ev) => {
    console.log(JSON.stringify({name, id: ev.lastEventId, opens}))
    if (name === 'turn_committed') { es.close(); process.exit(0) }
  })
}
setTimeout(() => { console.error('timed out'); process.exit(2) }, 30000)
`

// cutOnce forwards connections to target; the first one is cut as soon as a
// tool_call event has passed through it. It counts the connections.
func cutOnce(t *testing.T, target string) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			first := n.Add(1) == 1
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, c)
				if !first {
					io.Copy(c, up)
					return
				}
				r := bufio.NewReader(up)
				sawToolCall := false
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
					if strings.HasPrefix(line, "event: tool_call") {
						sawToolCall = true
					}
					if sawToolCall && line == "\n" {
						return // the connection drops mid-turn
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &n
}

// TestRealSSEClientReconnects: a standard SSE client from npm loses its connection
// mid-turn, reconnects by itself with Last-Event-ID and the same request: it sees
// every event of the one turn once, and the tool ran once.
func TestRealSSEClientReconnects(t *testing.T) {
	t.Parallel()
	es, _ := filepath.Abs("../.ci/mcp/node_modules/eventsource/dist/index.js")
	if _, err := os.Stat(es); err != nil {
		if os.Getenv("TURNLOG_REQUIRE_MCP") != "" {
			t.Fatalf("eventsource is not installed (.ci/install-mcp installs it): %v", err)
		}
		t.Skip("eventsource is not installed; run .ci/install-mcp")
	}
	b := setup(t)
	gate := b.newSession(t, "key-alice", "gate")
	addr, conns := cutOnce(t, strings.TrimPrefix(b.srv.URL, "http://"))
	script := filepath.Join(t.TempDir(), "client.mjs")
	os.WriteFile(script, []byte(fmt.Sprintf(sseClientJS, es)), 0o644)
	cmd := exec.Command("node", script, "http://"+addr+"/v1/sessions/"+gate+"/turns", "reconnecting-1")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []map[string]any
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var v map[string]any
			json.Unmarshal(sc.Bytes(), &v)
			mu.Lock()
			lines = append(lines, v)
			mu.Unlock()
		}
	}()
	<-b.entered // the tool runs; the client's first connection is cut meanwhile
	deadline := time.Now().Add(20 * time.Second)
	for conns.Load() < 2 { // the client reconnects on its own, after its reconnection time
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the client never reconnected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(b.release)
	<-done
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the client: %v %v", err, lines)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		name, id := l["name"].(string), l["id"].(string)
		if name == "text_delta" {
			continue // live pieces carry the last id they followed
		}
		if seen[name+id] {
			t.Fatalf("%s %s came twice: %v", name, id, lines)
		}
		seen[name+id] = true
	}
	last := lines[len(lines)-1]
	if last["name"] != "turn_committed" || last["opens"].(float64) != 2 {
		t.Fatalf("events %v", lines)
	}
	if n := b.turnCount(t, gate); n != 1 {
		t.Fatalf("%d turns, want 1", n)
	}
	select {
	case <-b.entered:
		t.Fatal("the tool ran twice")
	default:
	}
}
