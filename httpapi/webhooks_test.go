package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/delivery/webhook"
	"github.com/turnlog/turnlog/projection"
)

// TestDeliveriesAreForAdmins: the deliveries routes need a key with the admin role;
// an admin lists them (filtered, paged), reads one, and sends a dead letter again.
func TestDeliveriesAreForAdmins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	defer failing.Close()
	d, err := webhook.New(b.store, webhook.Options{Hooks: []webhook.Hook{{App: "demo", Name: "crm", URL: failing.URL, Events: []string{projection.WebhookTurnCommitted}, MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	b.store.RouteWebhooks(d.Route)
	for range 2 {
		id := b.newSession(t, "key-alice", "demo")
		if r := b.do(t, "POST", "/v1/sessions/"+id+"/turns", "key-alice", `{"input":"hello"}`); r.status != 200 {
			t.Fatalf("turn: %d %s", r.status, r.raw)
		}
	}
	for _, key := range []string{"key-alice", "key-bob"} {
		if r := b.do(t, "GET", "/v1/webhooks/deliveries", key, ""); r.status != http.StatusForbidden || r.errorCode() != "forbidden" {
			t.Fatalf("%s: %d %s, want 403 forbidden", key, r.status, r.raw)
		}
	}
	if r := b.do(t, "GET", "/v1/webhooks/deliveries", "", ""); r.status != http.StatusUnauthorized {
		t.Fatalf("no key: %d", r.status)
	}
	r := b.do(t, "GET", "/v1/webhooks/deliveries?status=pending", "key-root", "")
	list, _ := r.body["deliveries"].([]any)
	if r.status != 200 || len(list) != 2 || !strings.Contains(r.raw, `"event":"turn.committed"`) || !strings.Contains(r.raw, `"webhook":"crm"`) {
		t.Fatalf("pending: %d %s", r.status, r.raw)
	}
	r = b.do(t, "GET", "/v1/webhooks/deliveries?limit=1", "key-root", "")
	next, _ := r.body["next"].(string)
	if list, _ := r.body["deliveries"].([]any); len(list) != 1 || next == "" {
		t.Fatalf("page 1: %s", r.raw)
	}
	r = b.do(t, "GET", "/v1/webhooks/deliveries?limit=1&after="+next, "key-root", "")
	if list, _ := r.body["deliveries"].([]any); len(list) != 1 || strings.Contains(r.raw, `"id":"`+next+`"`) {
		t.Fatalf("page 2: %s", r.raw)
	}
	for q, field := range map[string]string{"status=lost": "status", "limit=0": "limit", "limit=x": "limit"} {
		if r := b.do(t, "GET", "/v1/webhooks/deliveries?"+q, "key-root", ""); r.status != 400 || !strings.Contains(r.errorMessage(), field) {
			t.Fatalf("?%s: %d %s", q, r.status, r.raw)
		}
	}
	if r := b.do(t, "POST", "/v1/webhooks/deliveries/"+next+"/redeliver", "key-root", ""); r.status != http.StatusConflict {
		t.Fatalf("redeliver a pending one: %d %s", r.status, r.raw)
	}
	if n, err := d.DeliverDue(context.Background()); n != 2 || err != nil { // one attempt each: dead
		t.Fatalf("DeliverDue = %d, %v", n, err)
	}
	r = b.do(t, "GET", "/v1/webhooks/deliveries/"+next, "key-root", "")
	if r.status != 200 || r.body["status"] != "dead" || r.body["last_status"] != float64(500) {
		t.Fatalf("dead: %d %s", r.status, r.raw)
	}
	if r := b.do(t, "POST", "/v1/webhooks/deliveries/"+next+"/redeliver", "key-alice", ""); r.status != http.StatusForbidden {
		t.Fatalf("redeliver without the role: %d", r.status)
	}
	r = b.do(t, "POST", "/v1/webhooks/deliveries/"+next+"/redeliver", "key-root", "")
	if r.status != 200 || r.body["status"] != "pending" || r.body["attempts"] != float64(0) {
		t.Fatalf("redeliver: %d %s", r.status, r.raw)
	}
	if r := b.do(t, "GET", "/v1/webhooks/deliveries/whd_none", "key-root", ""); r.status != 404 {
		t.Fatalf("unknown: %d %s", r.status, r.raw)
	}
}
