package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

// TestTheAPIReadsExactlyWhatTheClientWrote: a key that differs only in case is an
// unknown field, invalid UTF-8 and lone surrogates are refused naming the field, a
// body in anything but JSON is 415 — and none of them writes anything.
func TestTheAPIReadsExactlyWhatTheClientWrote(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	turns := "/v1/sessions/" + id + "/turns"
	r := b.do(t, "POST", turns, "key-alice", `{"input":"refund order 42"}`)
	if r.status != 200 || r.body["status"] != "suspended" {
		t.Fatalf("%d %s", r.status, r.raw)
	}
	interrupt := r.body["suspend_payload"].(map[string]any)["id"].(string)
	before := b.eventCount(t, id)
	for body, field := range map[string]string{
		`{"resume_map":{"` + interrupt + `":{"confirmed":false,"Confirmed":true}}}`: "resume_map." + interrupt + ".Confirmed",
		`{"resume_map":{"` + interrupt + `":{"CONFIRMED":true}}}`:                   "resume_map." + interrupt + ".CONFIRMED",
		`{"Resume_Map":{"` + interrupt + `":{"confirmed":true}}}`:                   "Resume_Map",
		`{"input":"hi \ud800 there"}`:                                               "input",
		"{\"input\":\"bad \xff byte\"}":                                             "input",
	} {
		r := b.do(t, "POST", turns, "key-alice", body)
		if r.status != http.StatusBadRequest || r.errorCode() != "invalid" || !strings.Contains(r.errorMessage(), field) {
			t.Errorf("%s: %d %s (want 400 naming %s)", body, r.status, r.raw, field)
		}
	}
	if after := b.eventCount(t, id); after != before {
		t.Fatalf("a refused request wrote %d events", after-before)
	}
	sessions := b.do(t, "GET", "/v1/sessions", "key-alice", "")
	for body, field := range map[string]string{`{"app":"demo","APP":"other"}`: "APP", `{"App":"demo"}`: "App"} {
		if r := b.do(t, "POST", "/v1/sessions", "key-alice", body); r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(), field) {
			t.Errorf("%s: %d %s", body, r.status, r.raw)
		}
	}
	// A simple cross-origin request (text/plain, a form) is never read.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		req, _ := http.NewRequest("POST", b.srv.URL+"/v1/sessions", strings.NewReader(`{"app":"demo"}`))
		req.Header.Set("Authorization", "Bearer key-alice")
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]map[string]string
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnsupportedMediaType || body["error"]["code"] != "unsupported_media_type" {
			t.Errorf("Content-Type %q: %d %v", ct, res.StatusCode, body)
		}
	}
	if again := b.do(t, "GET", "/v1/sessions", "key-alice", ""); again.raw != sessions.raw {
		t.Fatalf("a refused create made a session:\n%s\n%s", sessions.raw, again.raw)
	}
	// JSON with parameters is JSON; a body-less POST needs no Content-Type.
	req, _ := http.NewRequest("POST", b.srv.URL+"/v1/sessions", strings.NewReader(`{"app":"demo"}`))
	req.Header.Set("Authorization", "Bearer key-alice")
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("charset parameter: %v %v", res, err)
	}
	req, _ = http.NewRequest("POST", b.srv.URL+turns+"/"+r.body["turn_id"].(string)+"/cancel", nil)
	req.Header.Set("Authorization", "Bearer key-alice")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode == http.StatusUnsupportedMediaType {
		t.Fatalf("a body-less cancel: %v %v", res, err)
	}
}

// TestDevAnswersOnlyLoopbackHosts: a --dev server (no keys) refuses a request whose
// Host is not a loopback name or address — a rebinding page's — with the JSON shape.
func TestDevAnswersOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	apps, _ := turnlogtest.LoadApps(t, "demo", demo.Config, turnlog.Options{Functions: demo.Functions()})
	var n atomic.Int64
	e, _ := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: func() string { return fmt.Sprintf("s%d", n.Add(1)) }})
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: e, Reader: store, Dev: true}).Handler())
	defer srv.Close()
	for host, want := range map[string]int{"evil.example": 421, "evil.example:8080": 421, "10.0.0.5": 421, "localhost:8080": 201, "127.0.0.1": 201, "[::1]:8080": 201} {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL+"/v1/sessions", bytes.NewBufferString(`{"app":"demo"}`))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if res.StatusCode != want || want == 421 && body["error"] == nil {
			t.Errorf("Host %s: %d %v, want %d", host, res.StatusCode, body, want)
		}
	}
}

// eventCount is how many events the session's log holds.
func (b testBundle) eventCount(t *testing.T, id string) int {
	t.Helper()
	r := b.do(t, "GET", "/v1/sessions/"+id+"/events", "key-alice", "")
	evs, _ := r.body["events"].([]any)
	if r.status != 200 || len(evs) == 0 {
		t.Fatalf("events: %d %s", r.status, r.raw)
	}
	return len(evs)
}
