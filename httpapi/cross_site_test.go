package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

// TestDevRefusesCrossSiteRequests: under --dev, where no key is needed, every
// state-changing request — with a body or without (cancel, compact, erase) — that
// a browser sent from another site is 403, whatever its Origin ("null" included)
// or Sec-Fetch-Site says; the page's own origin and clients that send neither
// header (curl) are served. Nothing a refused request asked for happens.
func TestDevRefusesCrossSiteRequests(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	apps, _ := turnlogtest.LoadApps(t, "demo", demo.Config, turnlog.Options{Functions: demo.Functions()})
	n := 0
	e, _ := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: func() string { n++; return fmt.Sprintf("s%d", n) }})
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: e, Reader: store, Dev: true}).Handler())
	defer srv.Close()
	send := func(method, path, body string, header map[string]string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	status, raw := send("POST", "/v1/sessions", `{"app":"demo"}`, nil) // curl: no Origin, no Sec-Fetch-Site
	if status != http.StatusCreated {
		t.Fatalf("create without browser headers: %d %s", status, raw)
	}
	session := "s1"
	own := srv.URL
	crossSite := []map[string]string{
		{"Origin": "http://evil.example"},
		{"Origin": "null"},
		{"Origin": strings.Replace(own, "127.0.0.1", "localhost", 1)},
		{"Origin": own + "0"}, // another port
		{"Origin": strings.Replace(own, "http:", "https:", 1)},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Origin": own, "Sec-Fetch-Site": "cross-site"},
	}
	requests := []struct{ method, path, body string }{
		{"POST", "/v1/sessions", `{"app":"demo"}`},
		{"POST", "/v1/sessions/" + session + "/turns", `{"input":"hello"}`},
		{"POST", "/v1/sessions/" + session + "/compact", ""},
		{"POST", "/v1/sessions/" + session + "/turns/t1/cancel", ""},
		{"POST", "/v1/webhooks/deliveries/d1/redeliver", ""},
		{"DELETE", "/v1/sessions/" + session, ""},
	}
	for _, h := range crossSite {
		for _, r := range requests {
			if status, raw := send(r.method, r.path, r.body, h); status != http.StatusForbidden || !strings.Contains(raw, "another site") {
				t.Errorf("%s %s with %v: %d %s, want 403", r.method, r.path, h, status, raw)
			}
		}
	}
	if evs, _ := store.Events(t.Context(), session, 0); len(evs) != 1 {
		t.Fatalf("refused requests wrote %d events", len(evs)-1)
	}
	for _, h := range []map[string]string{{"Origin": own}, {"Origin": own, "Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}} {
		if status, raw := send("POST", "/v1/sessions/"+session+"/turns", `{"input":"hello"}`, h); status != http.StatusOK {
			t.Errorf("a turn with %v: %d %s, want 200", h, status, raw)
		}
	}
	if status, _ := send("GET", "/v1/sessions/"+session, "", map[string]string{"Origin": "http://evil.example"}); status != http.StatusOK {
		t.Errorf("a cross-site GET: %d, want 200 (reads change nothing; CORS keeps the answer from the page)", status)
	}
}
