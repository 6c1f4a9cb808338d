package systemtest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowAndIdleConnectionsCannotTakeTheServerDown: a real turnlog with API keys,
// held by 5,000 slow-body and 5,000 idle connections from 20 other loopback
// addresses, still runs every turn of 20 real clients on 127.0.0.1 with a p99
// within 3× of the same clients' without the attack (a baseline under 20 ms counts
// as 20 ms: the machine's own jitter), answers /healthz throughout, answers a
// client without a key 401 at once without waiting for its body, and answers the
// connections past a client address's cap 503 overloaded.
func TestSlowAndIdleConnectionsCannotTakeTheServerDown(t *testing.T) {
	const clients, turns = 20, 10
	base, _ := serveWithKey(t)
	addr := strings.TrimPrefix(base, "http://")

	runClients(base, clients, turns) // warm: the first turns of a process pay for what later ones reuse
	baseline := runClients(base, clients, turns)
	if len(baseline.failed) > 0 {
		t.Fatalf("without the attack: %v", baseline.failed)
	}
	t.Logf("without the attack: p99 %s", baseline.p99)

	attack := holdConnections(addr, 5000, 5000, 20)
	defer attack.close()
	refused := attack.countAnswered(" 503 ")
	t.Logf("attack: %d connections opened, %d answered 503", len(attack.all), refused)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
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

	attacked := runClients(base, clients, turns)
	t.Logf("under the attack: p99 %s", attacked.p99)
	stop()
	if failures := <-healthDone; len(failures) > 0 {
		t.Errorf("/healthz failed %d times under the attack: %v", len(failures), failures[:min(3, len(failures))])
	}
	if len(attacked.failed) > 0 {
		t.Errorf("real clients under the attack: %v", attacked.failed[:min(3, len(attacked.failed))])
	}
	if limit := 3 * max(baseline.p99, 20*time.Millisecond); attacked.p99 > limit {
		t.Errorf("p99 of a turn under the attack %s, want within %s (3× %s)", attacked.p99, limit, baseline.p99)
	}
	if refused == 0 {
		t.Error("no attack connection was answered 503 overloaded past its address's cap")
	}
}
