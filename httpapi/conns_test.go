package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/httpapi"
)

// serveLimited serves the bundle's API through httpapi.NewHTTPServer within l, on a
// loopback port, and returns its address.
func serveLimited(t *testing.T, b testBundle, l httpapi.ConnLimits) (string, *httpapi.HTTPServer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.NewHTTPServer(b.api.Handler(), ln, l)
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), srv
}

func rawRequest(t *testing.T, addr, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// TestABodyThatDoesNotArriveInTimeIs408: a body still unsent at the body deadline
// is refused 408 request_timeout (the connection is not held); a request without a
// key is answered 401 at once, its body never waited for.
func TestABodyThatDoesNotArriveInTimeIs408(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := httpapi.DefaultConnLimits
	l.BodyTimeout = 300 * time.Millisecond
	addr, srv := serveLimited(t, b, l)
	head := "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n%s\r\n{"
	_, r := rawRequest(t, addr, fmt.Sprintf(head, "Authorization: Bearer key-alice\r\n"))
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(raw), `"request_timeout"`) {
		t.Fatalf("a slow body: %d %s, want 408", res.StatusCode, raw)
	}
	// The connection ends with the answer: nothing waits for the rest of the body.
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("after the 408 the connection is still open (%v)", err)
	}
	for srv.Open() > 0 {
		time.Sleep(5 * time.Millisecond) // the server counts it out as it closes
	}
	began := time.Now()
	_, r = rawRequest(t, addr, fmt.Sprintf(head, ""))
	res, err = http.ReadResponse(r, nil)
	if err != nil || res.StatusCode != http.StatusUnauthorized || time.Since(began) > l.BodyTimeout {
		t.Fatalf("no key: %v %v after %s, want 401 before the body deadline", res, err, time.Since(began))
	}
}

// TestAStreamOutlivesTheDeadlines: a turn streamed as SSE that waits longer than
// the body, idle and write deadlines goes on to its end.
func TestAStreamOutlivesTheDeadlines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := httpapi.DefaultConnLimits
	l.BodyTimeout, l.IdleTimeout, l.WriteTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	addr, _ := serveLimited(t, b, l)
	gate := b.newSession(t, "key-alice", "gate")
	body := `{"input":"go","stream":true}`
	_, r := rawRequest(t, addr, fmt.Sprintf("POST /v1/sessions/%s/turns HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key-alice\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", gate, len(body), body))
	<-b.entered
	time.Sleep(3 * l.BodyTimeout) // every deadline passes while the tool holds the turn
	close(b.release)
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(raw), "event: turn_committed") {
		t.Fatalf("the stream ended before the turn: %s", raw)
	}
}

// TestConnectionsPastAnAddressCapAre503: past the per-address cap a new connection
// is answered 503 overloaded unless a quiet one can be closed to make room; with the
// cap off (behind a proxy) it is served.
func TestConnectionsPastAnAddressCapAre503(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := httpapi.DefaultConnLimits
	l.PerAddress = 2
	addr, srv := serveLimited(t, b, l)
	slow := "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer key-alice\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
	rawRequest(t, addr, slow) // two requests in flight: not quiet
	rawRequest(t, addr, slow)
	for srv.Open() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	_, r := rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(raw), `"overloaded"`) || res.Header.Get("Retry-After") == "" {
		t.Fatalf("past the cap: %d %s", res.StatusCode, raw)
	}
	if srv.Refused() != 1 {
		t.Fatalf("refused = %d, want 1", srv.Refused())
	}

	l.PerAddress = 0
	addr, _ = serveLimited(t, b, l)
	rawRequest(t, addr, slow)
	rawRequest(t, addr, slow)
	_, r = rawRequest(t, addr, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if res, err := http.ReadResponse(r, nil); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("with no per-address cap: %v %v", res, err)
	}
}

// TestABodyCutOffEndsItsConnection: whatever handler reads a body the deadline cuts
// off (the inspector's forms as the API's JSON) and answers without closing, the
// connection ends with the answer: nothing is left waiting on what the client may
// still send, and its slot is free.
func TestABodyCutOffEndsItsConnection(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := httpapi.DefaultConnLimits
	l.BodyTimeout = 200 * time.Millisecond
	srv := httpapi.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		http.Error(w, "bad form", http.StatusBadRequest)
	}), ln, l)
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	c, r := rawRequest(t, ln.Addr().String(), "POST /ui/signin HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nkey=")
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(r, nil)
	if err != nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("the answer: %v %v", res, err)
	}
	io.Copy(io.Discard, res.Body)
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("the connection stays open after the answer (%v)", err)
	}
}
