package main

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

// The connection attack: from attackAddrs addresses of 127.0.0.0/8 (not 127.0.0.1),
// slowBodies connections that send a request's head and then its body a byte a
// second, and idleConns that send nothing.
const (
	attackAddrs = 20
	slowBodies  = 5000
	idleConns   = 5000
	realClients = 20
	realTurns   = 10 // each
)

// TestSlowAndIdleConnectionsCannotTakeTheServerDown: a real turnlog with API keys,
// held by 5,000 slow-body and 5,000 idle connections from 20 other loopback
// addresses, still runs every turn of 20 real clients on 127.0.0.1 with a p99
// within 3× of the same clients' without the attack (a baseline under 20 ms counts
// as 20 ms: the machine's own jitter), answers /healthz throughout, answers a
// client without a key 401 at once without waiting for its body, and answers the
// connections past a client address's cap 503 overloaded.
func TestSlowAndIdleConnectionsCannotTakeTheServerDown(t *testing.T) {
	bin := turnlogBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--api-keys", "k-alice=alice", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "t.db"))
	cmd.Env = append(os.Environ(), "TURNLOG_STATE_DIR="+filepath.Join(dir, "state"))
	base := startServing(t, cmd)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := strings.TrimPrefix(base, "http://")

	runRealClients(t, base) // warm: the first turns of a process pay for what later ones reuse
	baseline := runRealClients(t, base)
	t.Logf("without the attack: p99 %s", baseline)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// A few goroutines drive every attack connection (the race detector allows
	// 8,128 at once): dialers, then one that trickles the slow bodies.
	var mu sync.Mutex
	var conns, slow []net.Conn
	next := make(chan int)
	var dialers sync.WaitGroup
	for range 16 {
		dialers.Add(1)
		go func() {
			defer dialers.Done()
			for i := range next {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%attackAddrs))}, Timeout: 5 * time.Second}
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					continue
				}
				isSlow := i%2 == 0
				if isSlow {
					_ = c.SetWriteDeadline(time.Now().Add(time.Second))
					fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer k-alice\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
				}
				mu.Lock()
				conns = append(conns, c)
				if isSlow {
					slow = append(slow, c)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < slowBodies+idleConns; i++ {
		next <- i
	}
	close(next)
	dialers.Wait()
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		for ctx.Err() == nil {
			for _, c := range slow {
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
				_, _ = c.Write([]byte(" "))
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	refused := countAnswered(conns, " 503 ")
	t.Logf("attack: %d connections opened, %d answered 503", len(conns), refused)

	healthDone := make(chan []string)
	go func() {
		var failures []string
		client := &http.Client{Timeout: 2 * time.Second}
		for ctx.Err() == nil {
			res, err := client.Get(base + "/healthz")
			if err != nil {
				failures = append(failures, err.Error())
			} else {
				if res.StatusCode != http.StatusOK {
					failures = append(failures, res.Status)
				}
				res.Body.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		healthDone <- failures
	}()

	// A client without a key is answered at once, its body never waited for.
	nokey, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nokey.Close()
	began := time.Now()
	fmt.Fprintf(nokey, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
	_ = nokey.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(nokey).ReadString('\n'); err != nil || !strings.Contains(line, " 401 ") {
		t.Errorf("a request without a key: %q %v, want 401", line, err)
	}
	t.Logf("401 without the body in %s", time.Since(began))

	attacked := runRealClients(t, base)
	t.Logf("under the attack: p99 %s", attacked)
	stop()
	if failures := <-healthDone; len(failures) > 0 {
		t.Errorf("/healthz failed %d times under the attack: %v", len(failures), failures[:min(3, len(failures))])
	}
	<-trickled
	if limit := 3 * max(baseline, 20*time.Millisecond); attacked > limit {
		t.Errorf("p99 of a turn under the attack %s, want within %s (3× %s)", attacked, limit, baseline)
	}
	if refused == 0 {
		t.Error("no attack connection was answered 503 overloaded past its address's cap")
	}
}

// runRealClients runs realTurns turns for each of realClients clients at once, each
// in a session of its own, and returns the p99 of the turns' times. Every turn must
// complete.
func runRealClients(t *testing.T, base string) time.Duration {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: realClients}}
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
	var took []time.Duration
	var wg sync.WaitGroup
	for i := 0; i < realClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := call("/v1/sessions", `{"app":"demo"}`)
			if err != nil {
				t.Error(err)
				return
			}
			for j := 0; j < realTurns; j++ {
				began := time.Now()
				res, err := call("/v1/sessions/"+sess["id"].(string)+"/turns", `{"input":"hello"}`)
				if err != nil {
					t.Error(err)
					return
				}
				if res["status"] != "completed" {
					t.Errorf("a real turn: %v", res)
				}
				mu.Lock()
				took = append(took, time.Since(began))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(took) != realClients*realTurns {
		t.Fatalf("%d of %d real turns completed", len(took), realClients*realTurns)
	}
	slices.Sort(took)
	return took[len(took)*99/100]
}

// countAnswered reads, with a short deadline, what each connection was sent, and
// counts those whose status line holds status.
func countAnswered(conns []net.Conn, status string) int {
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
	for _, c := range conns {
		work <- c
	}
	close(work)
	wg.Wait()
	return int(n.Load())
}
