package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

// TestNetworkAllowlist: behind the proxy a command reaches an allowed host over
// plain HTTP and over TLS (CONNECT), is refused another host with the reason, and
// cannot reach anything directly — not even a listener on the machine's loopback.
func TestNetworkAllowlist(t *testing.T) {
	t.Parallel()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from "+r.Host) })
	plain, tlsSrv := httptest.NewServer(handler), httptest.NewTLSServer(handler)
	defer plain.Close()
	defer tlsSrv.Close()
	var mu sync.Mutex
	var dialed []string
	s, _ := spec(t)
	s.AllowHost = func(_ context.Context, host string) error {
		if host == "allowed.test" || host == "sneaky.test" {
			return nil
		}
		return errors.New("rule only-allowed-test")
	}
	// allowed.test has a public address; sneaky.test, though allowed by name,
	// resolves to the machine's own loopback, where turnlog's API listens.
	s.Resolve = func(_ context.Context, host string) ([]net.IP, error) {
		switch host {
		case "allowed.test":
			return []net.IP{net.ParseIP("93.184.216.34")}, nil
		case "sneaky.test":
			return []net.IP{net.ParseIP("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	s.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		target := plain.Listener.Addr().String()
		if strings.HasSuffix(addr, ":443") {
			target = tlsSrv.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, target)
	}
	port := plain.Listener.Addr().(*net.TCPAddr).Port
	res := run(t, s, fmt.Sprintf(`curl -s -m 5 http://allowed.test/; echo
curl -sk -m 5 https://allowed.test/; echo
curl -s -m 5 http://evil.test/steal
curl -s -m 5 http://sneaky.test/admin; echo
curl -s -m 3 --noproxy '*' http://127.0.0.1:%d/ && echo DIRECT
(echo hi > /dev/tcp/127.0.0.1/%d) 2>/dev/null && echo DIRECT
true`, port, port))
	if !strings.Contains(res.Stdout, "hello from allowed.test\nhello from allowed.test") {
		t.Fatalf("the allowed host was not reached over http and https: %+v", res)
	}
	if !strings.Contains(res.Stdout, "network to evil.test denied: rule only-allowed-test") || strings.Contains(res.Stdout, "DIRECT") {
		t.Fatalf("%+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(res.Stdout, "network to sneaky.test denied: sneaky.test resolves to 127.0.0.1, an address of the machine") {
		t.Fatalf("a name resolving to loopback: %+v", res)
	}
	if strings.Join(dialed, " ") != "93.184.216.34:80 93.184.216.34:443" {
		t.Fatalf("the proxy dialed %v", dialed)
	}
	var got []string
	for _, d := range res.Network {
		got = append(got, fmt.Sprintf("%s:%s %v", d.Host, d.Port, d.Allowed))
	}
	if strings.Join(got, ", ") != "allowed.test:80 true, allowed.test:443 true, evil.test:80 false, sneaky.test:80 false" {
		t.Fatalf("network decisions %v", got)
	}
}

// TestServerBehindTheProxy: a long-lived program started with NewServer and an
// allowlist reaches an allowed host through the proxy, which lives as long as the
// program, is refused another, and reaches nothing directly.
func TestServerBehindTheProxy(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from "+r.Host) }))
	defer plain.Close()
	s, _ := spec(t)
	s.AllowHost = func(_ context.Context, host string) error {
		if host == "allowed.test" {
			return nil
		}
		return errors.New("rule only-allowed-test")
	}
	s.Resolve = func(context.Context, string) ([]net.IP, error) { return []net.IP{net.ParseIP("93.184.216.34")}, nil }
	s.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, plain.Listener.Addr().String())
	}
	port := plain.Listener.Addr().(*net.TCPAddr).Port
	srv, err := sandbox.NewServer(s, []string{"bash", "-c", fmt.Sprintf(`read line; curl -s -m 5 http://allowed.test/; echo
curl -s -m 5 http://evil.test/; echo
curl -s -m 3 --noproxy '*' http://127.0.0.1:%d/ && echo DIRECT; true`, port)})
	if err != nil {
		t.Fatal(err)
	}
	stdin, _ := srv.Cmd.StdinPipe()
	var out strings.Builder
	srv.Cmd.Stdout = &out
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "go\n") // the program runs while the proxy serves it
	stdin.Close()
	if err := srv.Cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	hosts := srv.Close()
	if !strings.Contains(out.String(), "hello from allowed.test") || !strings.Contains(out.String(), "network to evil.test denied: rule only-allowed-test") || strings.Contains(out.String(), "DIRECT") {
		t.Fatalf("output: %s", out.String())
	}
	if len(hosts) != 2 || !hosts[0].Allowed || hosts[1].Allowed {
		t.Fatalf("decisions %+v", hosts)
	}
}

// TestAProxyCannotBeTurnedOnTurnlog: a command that opens thousands of connections
// to its proxy — idle ones, and tunnels it keeps open — holds no more of turnlog's
// descriptors than its cap allows, is told it is past it, and another user's API
// call goes on answering within twice its time (the median; or 10 ms more, on a
// machine whose two cores the attacker's own process shares).
func TestAProxyCannotBeTurnedOnTurnlog(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer api.Close()
	call := func() time.Duration {
		start := time.Now()
		resp, err := http.Get(api.URL)
		if err != nil {
			t.Errorf("the API call failed: %v", err)
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	median := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	var calls []time.Duration
	for range 50 {
		calls = append(calls, call())
	}
	unattacked := median(calls)
	fdsBefore := openDescriptors(t)
	s, _ := spec(t)
	s.AllowHost = func(context.Context, string) error { return nil }
	s.Resolve = func(context.Context, string) ([]net.IP, error) { return []net.IP{net.ParseIP("93.184.216.34")}, nil }
	s.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, api.Listener.Addr().String())
	}
	started := make(chan struct{})
	done := make(chan *sandbox.Result, 1)
	go func() {
		res, err := sandbox.Run(context.Background(), sandbox.WithStarted(s, func(int) { close(started) }), `python3 -c '
import os, socket, time
port = int(os.environ["HTTP_PROXY"].rsplit(":", 1)[1])
held = []
for i in range(3000):
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=1)
        if i % 2: c.send(b"CONNECT x.test:80 HTTP/1.1\r\n\r\n")
        held.append(c)
    except OSError:
        pass
print("held", len(held), flush=True)
time.sleep(3)
'`)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	most, calls := 0, nil
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		most = max(most, openDescriptors(t))
		calls = append(calls, call())
	}
	attacked := median(calls)
	res := <-done
	if res == nil {
		return
	}
	if res.ConnectionsRefused == 0 {
		t.Fatalf("no connection was refused: %+v", res)
	}
	if held := most - fdsBefore; held > 2*sandbox.DefaultProxyConnections+64 {
		t.Fatalf("the command held %d of turnlog's descriptors through its proxy (its cap: %d connections)", held, sandbox.DefaultProxyConnections)
	}
	if limit := max(2*unattacked, unattacked+10*time.Millisecond); attacked > limit {
		t.Fatalf("another user's API call took %v under the attack, %v without it", attacked, unattacked)
	}
}

func openDescriptors(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestAProxiedCommandLeavesOtherProcessesAlone: the thread a proxied command starts
// from goes back to turnlog's network namespace when the command ends, rather than
// ending — which would kill, by their parent-death signal, the processes it had
// started before: here a long-lived program started from the very thread the
// proxied commands then start from (one processor, one goroutine: the runtime hands
// the proxy's goroutine the thread the test's own waits on). Not parallel: it sets
// GOMAXPROCS while it runs.
func TestAProxiedCommandLeavesOtherProcessesAlone(t *testing.T) {
	s, _ := spec(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	runtime.LockOSThread()
	server, err := sandbox.Command(s, []string{"sleep", "60"})
	if err == nil {
		err = server.Start()
	}
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { server.Wait(); close(exited) }()
	defer func() { server.Process.Kill(); <-exited }()
	proxied := s
	proxied.AllowHost = func(context.Context, string) error { return errors.New("nothing allowed") }
	for range 10 {
		if _, err := sandbox.Run(context.Background(), proxied, "true"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-exited:
		t.Fatalf("a program started before the proxied commands died with them: %v", server.ProcessState)
	case <-time.After(100 * time.Millisecond): // its parent-death signal would have come at once
	}
}
