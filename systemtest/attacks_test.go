package systemtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The hostile clients the server's tests and benchmarks send: connections that hold
// what they can, and bodies that cost what they can. Attack traffic comes from
// 127.0.0.2 and up; real clients stay on 127.0.0.1.

// serveWithKey starts a real turnlog (the built binary) with one API key, k-alice,
// on a SQLite file, and returns its base URL and process.
func serveWithKey(tb testing.TB) (string, *exec.Cmd) {
	tb.Helper()
	dir := tb.TempDir()
	cmd := exec.Command(turnlogBinary(tb), "serve", "--api-keys", "k-alice=alice", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "t.db"))
	cmd.Env = append(os.Environ(), "TURNLOG_STATE_DIR="+filepath.Join(dir, "state"))
	base := startServing(tb, cmd)
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return base, cmd
}

// clientRun is what a set of real clients measured.
type clientRun struct {
	p99     time.Duration
	perSec  float64 // turns a second, all clients together
	failed  []string
	elapsed time.Duration
}

// runClients runs turns turns for each of clients clients at once, each in a
// session of its own, as alice.
func runClients(base string, clients, turns int) clientRun {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	call := func(path, body string) (map[string]any, error) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k-alice")
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil || res.StatusCode >= 300 {
			return nil, fmt.Errorf("%s: %d %s", path, res.StatusCode, raw)
		}
		return out, nil
	}
	var mu sync.Mutex
	var run clientRun
	var took []time.Duration
	var wg sync.WaitGroup
	began := time.Now()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := func(err error) {
				mu.Lock()
				run.failed = append(run.failed, err.Error())
				mu.Unlock()
			}
			sess, err := call("/v1/sessions", `{"app":"demo"}`)
			if err != nil {
				fail(err)
				return
			}
			for j := 0; j < turns; j++ {
				start := time.Now()
				res, err := call("/v1/sessions/"+sess["id"].(string)+"/turns", `{"input":"hello"}`)
				if err != nil {
					fail(err)
					return
				}
				if res["status"] != "completed" {
					fail(fmt.Errorf("a turn: %v", res))
				}
				mu.Lock()
				took = append(took, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	run.elapsed = time.Since(began)
	if len(took) < clients*turns {
		run.failed = append(run.failed, fmt.Sprintf("%d of %d turns completed", len(took), clients*turns))
	}
	if len(took) > 0 {
		slices.Sort(took)
		run.p99 = took[len(took)*99/100]
		run.perSec = float64(len(took)) / run.elapsed.Seconds()
	}
	return run
}

// heldConnections are attack connections kept open: slow ones send a request's head
// and then a byte of its body a second, idle ones send nothing.
type heldConnections struct {
	all      []net.Conn
	stop     context.CancelFunc
	trickled chan struct{}
}

// holdConnections opens slow and idle connections to addr from addrs addresses
// (127.0.0.2 and up), with a few goroutines (the race detector allows 8,128 at
// once): dialers, then one that trickles the slow bodies until close.
func holdConnections(addr string, slow, idle, addrs int) *heldConnections {
	ctx, stop := context.WithCancel(context.Background())
	h := &heldConnections{stop: stop, trickled: make(chan struct{})}
	var mu sync.Mutex
	var slowOnes []net.Conn
	next := make(chan int)
	var dialers sync.WaitGroup
	for range 16 {
		dialers.Add(1)
		go func() {
			defer dialers.Done()
			for i := range next {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%addrs))}, Timeout: 5 * time.Second}
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					continue
				}
				isSlow := i < slow
				if isSlow {
					_ = c.SetWriteDeadline(time.Now().Add(time.Second))
					fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer k-alice\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
				}
				mu.Lock()
				h.all = append(h.all, c)
				if isSlow {
					slowOnes = append(slowOnes, c)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < slow+idle; i++ {
		next <- i
	}
	close(next)
	dialers.Wait()
	go func() {
		defer close(h.trickled)
		for ctx.Err() == nil {
			for _, c := range slowOnes {
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
				_, _ = c.Write([]byte(" "))
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return h
}

// close ends the attack and its connections.
func (h *heldConnections) close() {
	h.stop()
	<-h.trickled
	for _, c := range h.all {
		c.Close()
	}
}

// countAnswered reads, with a short deadline, what each connection was sent, and
// counts those whose status line holds status.
func (h *heldConnections) countAnswered(status string) int {
	var n atomic.Int64
	var wg sync.WaitGroup
	work := make(chan net.Conn)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64)
			for c := range work {
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
				if k, _ := io.ReadAtLeast(c, buf, 13); k >= 13 && strings.Contains(string(buf[:k]), status) {
					n.Add(1)
				}
			}
		}()
	}
	for _, c := range h.all {
		work <- c
	}
	close(work)
	wg.Wait()
	return int(n.Load())
}

// nestedBody is a body of about size bytes: prefix, then open repeated as deep as
// it goes, then suffix.
func nestedBody(size int, prefix, open, suffix string) string {
	n := (size - len(prefix) - len(suffix) - 16) / len(open)
	return prefix + strings.Repeat(open, n) + suffix
}

// postRaw sends a request whole on a connection of its own from src (nil: any
// loopback address), then times its answer from the body's last byte, so the time is
// the server's and not the client's.
func postRaw(src net.IP, addr, method, path, body string) (status int, answer string, took time.Duration, err error) {
	d := net.Dialer{}
	if src != nil {
		d.LocalAddr = &net.TCPAddr{IP: src}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return 0, "", 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	w := bufio.NewWriterSize(c, 64<<10)
	fmt.Fprintf(w, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer k-alice\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		method, path, addr, len(body), body)
	if err := w.Flush(); err != nil {
		return 0, "", 0, err
	}
	sent := time.Now()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", 0, err
	}
	took = time.Since(sent)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw), took, nil
}

// nestingFlood has attackers clients send 1 MB bodies nested as deep as they go,
// one after another, from 127.0.0.2 and up, until ctx ends; it returns how many
// were sent and how many were not answered 400.
func nestingFlood(ctx context.Context, addr string, attackers int) (sent, wrong *atomic.Int64, done *sync.WaitGroup) {
	sent, wrong, done = &atomic.Int64{}, &atomic.Int64{}, &sync.WaitGroup{}
	body := nestedBody(1_000_000, `{"app":"demo","metadata":`, "[", "")
	for k := range attackers {
		done.Add(1)
		go func() {
			defer done.Done()
			src := net.IPv4(127, 0, 0, byte(2+k%250))
			for ctx.Err() == nil {
				status, _, _, err := postRaw(src, addr, "POST", "/v1/sessions", body)
				sent.Add(1)
				if err != nil || status != http.StatusBadRequest {
					wrong.Add(1)
				}
			}
		}()
	}
	return sent, wrong, done
}
