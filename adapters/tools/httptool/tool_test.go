package httptool

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/fsm"
)

var testCall = fsm.CallInfo{Session: "s1", Turn: "t1", Agent: "support", Path: "support/tool/call_1", User: "ana"}

func callCtx() context.Context { return fsm.WithCallInfo(context.Background(), testCall) }

// received is one request as the receiver saw it.
type received struct {
	header http.Header
	target string
	body   []byte
}

// receiver answers with handle and keeps every request it got.
type receiver struct {
	mu  sync.Mutex
	got []received
	srv *httptest.Server
}

func newReceiver(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), r.URL.RequestURI(), body})
		n := len(rc.got)
		rc.mu.Unlock()
		handle(n, w, r)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received{}, rc.got...)
}

const orderSchema = `{"type":"object","properties":{"order_id":{"type":"integer"},"note":{"type":"string"}},"required":["order_id"],"additionalProperties":false}`

func newTool(t *testing.T, url string, edit func(*Config)) *Tool {
	t.Helper()
	c := Config{Name: "refund", Description: "refund an order", URL: url, Parameters: json.RawMessage(orderSchema),
		Secrets: [][]byte{[]byte("current-secret")}, Timeout: 2 * time.Second, Backoff: time.Millisecond,
		Clock: func() time.Time { return time.Unix(1_800_000_000, 0) }}
	if edit != nil {
		edit(&c)
	}
	tool, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func jsonAnswer(body string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// hmacHex is the signature computed here from the documented scheme, not with the
// package's own code.
func hmacHex(secret, payload string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(payload))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestRequestCarriesKeyNamesAndSignature(t *testing.T) {
	rc := newReceiver(t, jsonAnswer(`{"refunded": true}`))
	tool := newTool(t, rc.srv.URL+"/hooks/refund?v=2", func(c *Config) {
		c.Headers = map[string]string{"X-Api-Key": "k-123"}
		c.Secrets = [][]byte{[]byte("current-secret"), []byte("next-secret")}
	})
	out, err := tool.Call(callCtx(), json.RawMessage(`{"order_id":42}`))
	if err != nil || string(out) != `{"refunded": true}` {
		t.Fatalf("Call = %s, %v", out, err)
	}
	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	r := got[0]
	key := r.header.Get("Idempotency-Key")
	want := map[string]string{"Content-Type": "application/json", "Turnlog-Session": "s1", "Turnlog-Turn": "t1",
		"Turnlog-Path": "support/tool/call_1", "Turnlog-Agent": "support", "Turnlog-User": "ana", "X-Api-Key": "k-123", "Turnlog-Attempt": "1"}
	for k, v := range want {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.header.Get(k), v)
		}
	}
	if string(r.body) != `{"order_id":42}` || r.target != "/hooks/refund?v=2" {
		t.Fatalf("body %s target %s", r.body, r.target)
	}
	// The documented scheme: t=<unix>,v1=<hex>,... over "<t>.<key>.<METHOD>.<target>.<body>".
	payload := fmt.Sprintf("1800000000.%s.POST./hooks/refund?v=2.{\"order_id\":42}", key)
	wantSig := "t=1800000000,v1=" + hmacHex("current-secret", payload) + ",v1=" + hmacHex("next-secret", payload)
	if sig := r.header.Get("Turnlog-Signature"); sig != wantSig {
		t.Fatalf("signature\n got %s\nwant %s", sig, wantSig)
	}
	now := time.Unix(1_800_000_030, 0)
	for _, secret := range []string{"current-secret", "next-secret"} {
		if err := Verify([][]byte{[]byte(secret)}, r.header, "POST", r.target, r.body, now, 5*time.Minute); err != nil {
			t.Errorf("Verify with %s: %v", secret, err)
		}
	}
	refused := []struct {
		name                 string
		secret, target, body string
		key                  string
		at                   time.Time
	}{
		{"tampered body", "current-secret", r.target, `{"order_id":43}`, key, now},
		{"other target", "current-secret", "/hooks/refund", string(r.body), key, now},
		{"fresh key", "current-secret", r.target, string(r.body), "tl_other", now},
		{"wrong secret", "old-secret", r.target, string(r.body), key, now},
		{"too old", "current-secret", r.target, string(r.body), key, now.Add(time.Hour)},
	}
	for _, c := range refused {
		h := r.header.Clone()
		h.Set("Idempotency-Key", c.key)
		if err := Verify([][]byte{[]byte(c.secret)}, h, "POST", c.target, []byte(c.body), c.at, 5*time.Minute); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: Verify = %v, want ErrBadSignature", c.name, err)
		}
	}
}

func TestIdempotencyKeyIsPerCall(t *testing.T) {
	a := IdempotencyKey("s1", "t1", "support/tool/call_1")
	if a != IdempotencyKey("s1", "t1", "support/tool/call_1") {
		t.Fatal("the same call gave two keys")
	}
	seen := map[string]string{a: "base"}
	for name, k := range map[string]string{
		"other path":    IdempotencyKey("s1", "t1", "support/tool/call_2"),
		"other turn":    IdempotencyKey("s1", "t2", "support/tool/call_1"),
		"other session": IdempotencyKey("s2", "t1", "support/tool/call_1"),
		"shifted parts": IdempotencyKey("s1t", "1", "support/tool/call_1"),
	} {
		if prev, dup := seen[k]; dup {
			t.Fatalf("%s and %s share key %s", name, prev, k)
		}
		seen[k] = name
	}
}

func TestArgumentsFailingTheSchemaAreNeverSent(t *testing.T) {
	rc := newReceiver(t, jsonAnswer(`{}`))
	tool := newTool(t, rc.srv.URL, nil)
	for args, field := range map[string]string{`{"order_id":"42"}`: "order_id", `{}`: "order_id", `{"order_id":1,"x":2}`: "x", `{"order_id":`: "$"} {
		_, err := tool.Call(callCtx(), json.RawMessage(args))
		var ae *fsm.ArgumentsError
		if !errors.As(err, &ae) || ae.Field != field {
			t.Errorf("%s: err = %v, want an arguments error on %s", args, err, field)
		}
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("the receiver got %d requests", n)
	}
}

func toolErr(t *testing.T, err error) *fsm.ToolError {
	t.Helper()
	var te *fsm.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v (%T), want a *fsm.ToolError", err, err)
	}
	return te
}

func TestAnswers(t *testing.T) {
	cases := []struct {
		name        string
		status      int
		ctype, body string
		retry       bool
		wantOut     string
		wantKind    string
		wantMsg     string
		wantPublic  bool
		wantHits    int
	}{
		{name: "json", status: 200, ctype: "application/json; charset=utf-8", body: `{"a":1}`, wantOut: `{"a":1}`, wantHits: 1},
		{name: "problem json", status: 201, ctype: "application/problem+json", body: `[1]`, wantOut: `[1]`, wantHits: 1},
		{name: "text", status: 200, ctype: "text/plain; charset=utf-8", body: "sunny, 21°C", wantOut: `"sunny, 21°C"`, wantHits: 1},
		{name: "no content", status: 204, wantOut: `null`, wantHits: 1},
		{name: "html", status: 200, ctype: "text/html", body: "<p>hi</p>", wantKind: fsm.ToolErrInvalidOutput, wantMsg: "text/html", wantPublic: true, wantHits: 1},
		{name: "bad json", status: 200, ctype: "application/json", body: `{"a":`, wantKind: fsm.ToolErrInvalidOutput, wantMsg: "does not parse", wantPublic: true, wantHits: 1},
		{name: "4xx error string", status: 404, ctype: "application/json", body: `{"error":"order 42 does not exist"}`, wantKind: fsm.ToolErrFailed, wantMsg: "HTTP 404: order 42 does not exist", wantPublic: true, wantHits: 1},
		{name: "4xx error message", status: 422, ctype: "application/json", body: `{"error":{"message":"amount too high"}}`, wantKind: fsm.ToolErrFailed, wantMsg: "HTTP 422: amount too high", wantPublic: true, wantHits: 1},
		{name: "4xx text", status: 409, ctype: "text/plain", body: "already refunded\n", wantKind: fsm.ToolErrFailed, wantMsg: "HTTP 409: already refunded", wantPublic: true, wantHits: 1},
		{name: "4xx not retried", status: 400, body: "no", retry: true, wantKind: fsm.ToolErrFailed, wantMsg: "HTTP 400: no", wantPublic: true, wantHits: 1},
		{name: "5xx once", status: 502, body: "bad gateway", wantKind: fsm.ToolErrOutcomeUnknown, wantMsg: "outcome is unknown", wantHits: 1},
		{name: "5xx retried", status: 503, body: "busy", retry: true, wantKind: fsm.ToolErrOutcomeUnknown, wantMsg: "after 4 attempts", wantHits: 4},
		{name: "429 retried", status: 429, body: "slow down", retry: true, wantKind: fsm.ToolErrFailed, wantMsg: "HTTP 429: slow down", wantPublic: true, wantHits: 4},
		{name: "redirect", status: 302, body: "", wantKind: fsm.ToolErrFailed, wantMsg: "does not follow", wantPublic: true, wantHits: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				if c.ctype != "" {
					w.Header().Set("Content-Type", c.ctype)
				}
				if c.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			})
			tool := newTool(t, rc.srv.URL, func(cf *Config) { cf.Retry = c.retry })
			out, err := tool.Call(callCtx(), json.RawMessage(`{"order_id":1}`))
			if got := len(rc.requests()); got != c.wantHits {
				t.Errorf("%d requests, want %d", got, c.wantHits)
			}
			keys := map[string]bool{}
			for _, r := range rc.requests() {
				keys[r.header.Get("Idempotency-Key")] = true
			}
			if len(keys) != 1 {
				t.Errorf("retries used %d keys, want 1", len(keys))
			}
			if c.wantKind == "" {
				if err != nil || string(out) != c.wantOut {
					t.Fatalf("Call = %s, %v; want %s", out, err, c.wantOut)
				}
				return
			}
			te := toolErr(t, err)
			if te.Kind != c.wantKind || !strings.Contains(te.Message, c.wantMsg) || te.Public != c.wantPublic {
				t.Fatalf("error = %+v, want kind %s with %q (public %v)", te, c.wantKind, c.wantMsg, c.wantPublic)
			}
		})
	}
}

func TestRetryRecoversWithTheSameKey(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 3 {
			http.Error(w, "try later", 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	tool := newTool(t, rc.srv.URL, func(c *Config) { c.Retry = true })
	out, err := tool.Call(callCtx(), json.RawMessage(`{"order_id":1}`))
	if err != nil || string(out) != `{"ok":true}` {
		t.Fatalf("Call = %s, %v", out, err)
	}
	got := rc.requests()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	for i, r := range got {
		if r.header.Get("Idempotency-Key") != got[0].header.Get("Idempotency-Key") || r.header.Get("Turnlog-Attempt") != fmt.Sprint(i+1) {
			t.Fatalf("attempt %d: key %s attempt %s", i+1, r.header.Get("Idempotency-Key"), r.header.Get("Turnlog-Attempt"))
		}
	}
}

func TestSlowReceiverHitsTheTimeout(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	tool := newTool(t, rc.srv.URL, func(c *Config) { c.Timeout = 50 * time.Millisecond })
	_, err := tool.Call(callCtx(), json.RawMessage(`{"order_id":1}`))
	te := toolErr(t, err)
	if te.Kind != fsm.ToolErrTimeout || !strings.Contains(te.Message, "outcome is unknown") {
		t.Fatalf("error = %+v", te)
	}
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("a tool that is not idempotent was sent %d times", n)
	}
}

func TestRefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/"
	ln.Close() // nothing listens there now: loopback refuses at once
	tool := newTool(t, url, nil)
	_, err = tool.Call(callCtx(), json.RawMessage(`{"order_id":1}`))
	if te := toolErr(t, err); te.Kind != fsm.ToolErrFailed || !strings.Contains(te.Message, "not delivered") {
		t.Fatalf("error = %+v", te)
	}
}

func TestOversizedAnswerIsInvalidOutput(t *testing.T) {
	rc := newReceiver(t, jsonAnswer(`"`+strings.Repeat("x", 2000)+`"`))
	tool := newTool(t, rc.srv.URL, func(c *Config) { c.MaxResponseBytes = 1000 })
	_, err := tool.Call(callCtx(), json.RawMessage(`{"order_id":1}`))
	if te := toolErr(t, err); te.Kind != fsm.ToolErrInvalidOutput || !strings.Contains(te.Message, "larger than 1000 bytes") {
		t.Fatalf("error = %+v", te)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, c := range map[string]Config{
		"scheme":          {URL: "ftp://x/"},
		"credentials":     {URL: "http://u:p@127.0.0.1/"},
		"reserved header": {URL: "http://127.0.0.1/", Headers: map[string]string{"idempotency-key": "x"}},
		"schema type":     {URL: "http://127.0.0.1/", Parameters: json.RawMessage(`{"type":"string"}`)},
		"total < one":     {URL: "http://127.0.0.1/", Timeout: time.Minute, TotalTimeout: time.Second},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted %+v", name, c)
		}
	}
}

// TestCallThatMustBeSentOnceIsSentOnce: when the receiver drops a reused connection
// after reading a request, the HTTP client must not resend it by itself for a tool
// that is neither idempotent nor dedupes; one that may be resent is, with its key.
func TestCallThatMustBeSentOnceIsSentOnce(t *testing.T) {
	for _, retry := range []bool{false, true} {
		var mu sync.Mutex
		seen := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			mu.Lock()
			seen++
			n := seen
			mu.Unlock()
			if n == 2 { // the second request, on the kept-alive connection: dropped unanswered
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{}`)
		}))
		tool := newTool(t, srv.URL, func(c *Config) { c.Retry = retry })
		if _, err := tool.Call(callCtx(), json.RawMessage(`{"order_id":1}`)); err != nil {
			t.Fatal(err)
		}
		_, err := tool.Call(fsm.WithCallInfo(context.Background(), fsm.CallInfo{Session: "s1", Turn: "t1", Path: "a/tool/c2"}), json.RawMessage(`{"order_id":2}`))
		srv.Close()
		mu.Lock()
		got := seen
		mu.Unlock()
		switch {
		case !retry && (got != 2 || err == nil):
			t.Fatalf("a call to send once: %d requests in all, err %v; want the second sent once and failing", got, err)
		case retry && (got != 3 || err != nil):
			t.Fatalf("a call that may be resent: %d requests in all, err %v; want it resent and answered", got, err)
		}
		if !retry {
			if te := toolErr(t, err); te.Kind != fsm.ToolErrOutcomeUnknown {
				t.Fatalf("error = %+v, want outcome_unknown", te)
			}
		}
	}
}
