package httpapi_test

import (
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// TestOpenAPIMatchesRouter checks that every registered route is documented in
// openapi.yaml and every documented operation is registered.
func TestOpenAPIMatchesRouter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	raw, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	var documented, registered []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, r := range b.api.Echo().Routes() {
		if r.Method == "echo_route_not_found" { // echo's own fallback for a group
			continue
		}
		path := r.Path
		for _, seg := range strings.Split(path, "/") {
			if strings.HasPrefix(seg, ":") {
				path = strings.Replace(path, seg, "{"+seg[1:]+"}", 1)
			}
		}
		registered = append(registered, r.Method+" "+path)
	}
	sort.Strings(documented)
	sort.Strings(registered)
	if strings.Join(documented, "\n") != strings.Join(registered, "\n") {
		t.Fatalf("openapi.yaml documents\n%s\n\nthe router has\n%s", strings.Join(documented, "\n"), strings.Join(registered, "\n"))
	}
	r := b.do(t, "GET", "/openapi.yaml", "", "")
	if r.status != 200 || !strings.HasPrefix(r.raw, "openapi: 3.1") {
		t.Fatalf("GET /openapi.yaml: %d", r.status)
	}
}

func TestOperations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := b.do(t, "GET", "/readyz", "", ""); r.status != http.StatusOK || r.body["status"] != "ready" {
		t.Fatalf("readyz: %d %s", r.status, r.raw)
	}
	id := b.newSession(t, "key-alice", "demo")
	b.do(t, "POST", "/v1/sessions/"+id+"/turns", "key-alice", `{"input":"where is order 42?"}`)
	// A request is measured and logged after its response is written, so the client
	// may ask for /metrics first: look again until the POST shows up.
	wants := []string{`turnlog_turns_total{app="demo",status="completed"} 1`, `turnlog_tool_call_seconds_count{outcome="ok",tool="lookup_order"} 1`,
		`turnlog_model_call_seconds_count`, `turnlog_sse_clients 0`, `turnlog_http_request_seconds_count{method="POST",route="/v1/sessions/:id/turns",status="200"} 1`}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := b.do(t, "GET", "/metrics", "", "")
		missing := ""
		for _, want := range wants {
			if !strings.Contains(r.raw, want) {
				missing = want
				break
			}
		}
		if missing == "" && strings.Contains(b.log.String(), `"route":"/v1/sessions/:id/turns"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %q:\n%s", missing, r.raw)
		}
		time.Sleep(10 * time.Millisecond)
	}
	log := b.log.String()
	if !strings.Contains(log, `"route":"/v1/sessions/:id/turns"`) || !strings.Contains(log, `"request_id":"`) || !strings.Contains(log, `"user":"alice"`) {
		t.Fatalf("request log:\n%s", log)
	}
}
