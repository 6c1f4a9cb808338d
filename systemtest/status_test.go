package systemtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// TestStatusSaysWhatIsTrue: a session whose turn waits for people is "waiting" (and
// a new turn on it is refused); /interrupts shows every field the turn response gave
// each interrupt, for a tool approval and for a guardrail review alike.
func TestStatusSaysWhatIsTrue(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, config, app, input string }{
		{"tool approval", "", "demo", "refund order 42"},
		{"guardrail review", "fixtures/review-approve/agent.yaml", "", "goodwill for order 42"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := turnlog.Options{Config: c.config, DB: filepath.Join(t.TempDir(), "t.db"), Synchronous: "OFF", Functions: demo.Functions()}
			if c.config == "" {
				opts.Config, opts.ConfigData = "examples/demo/agent.yaml", demo.Config
			}
			tl, err := turnlog.Open(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer tl.Close()
			app := c.app
			if app == "" {
				app = tl.Apps()[0].Name
			}
			handler, stop := tl.Handler(turnlog.ServeOptions{Dev: true})
			defer stop()
			srv := httptest.NewServer(handler)
			defer srv.Close()
			call := func(method, path, body string) (int, map[string]any) {
				req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer res.Body.Close()
				raw, _ := io.ReadAll(res.Body)
				var v map[string]any
				json.Unmarshal(raw, &v)
				return res.StatusCode, v
			}
			_, sess := call("POST", "/v1/sessions", `{"app": "`+app+`"}`)
			id, _ := sess["id"].(string)
			_, turn := call("POST", "/v1/sessions/"+id+"/turns", `{"input": "`+c.input+`"}`)
			if turn["status"] != "suspended" {
				t.Fatalf("turn = %v", turn)
			}
			if _, s := call("GET", "/v1/sessions/"+id, ""); s["status"] != "waiting" {
				t.Fatalf("a session waiting for people says %v", s["status"])
			}
			if code, _ := call("POST", "/v1/sessions/"+id+"/turns", `{"input": "hello?"}`); code != http.StatusConflict {
				t.Fatalf("a new turn on a waiting session: %d", code)
			}
			_, listed := call("GET", "/v1/sessions/"+id+"/interrupts", "")
			pending, _ := listed["interrupts"].([]any)
			asked, _ := turn["interrupts"].([]any)
			if len(pending) != len(asked) || len(asked) == 0 {
				t.Fatalf("turn interrupts %v, /interrupts %v", asked, pending)
			}
			for i, a := range asked {
				want, got := a.(map[string]any), pending[i].(map[string]any)
				for k, v := range want {
					if gv, _ := json.Marshal(got[k]); string(gv) != string(must(json.Marshal(v))) {
						t.Errorf("interrupt %d: %s is %s on /interrupts, %s in the turn response", i, k, gv, must(json.Marshal(v)))
					}
				}
			}
		})
	}
}

func must(b []byte, _ error) []byte { return b }
