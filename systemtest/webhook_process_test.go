package systemtest

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/httptool"
)

// TestWebhookDeliveredAcrossACrash: a real turnlog commits a turn, and its webhook
// delivery reaches the receiver, which takes it but has not answered when turnlog is
// SIGKILLed. The outbox row was committed with the turn; after the restart the same
// delivery (same id, same signed body) is sent again and the receiver, deduplicating
// by id, applies it once.
func TestWebhookDeliveredAcrossACrash(t *testing.T) {
	secret := "a-webhook-secret-of-some-length"
	t.Setenv("TURNLOG_HOOK_SECRET", secret)
	var mu sync.Mutex
	type delivery struct{ id, body string }
	var got []delivery
	applied := map[string]int{}
	firstHeld, second := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := httptool.Verify([][]byte{[]byte(secret)}, r.Header, r.Method, r.URL.RequestURI(), body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("Turnlog-Delivery")
		mu.Lock()
		got = append(got, delivery{id, string(body)})
		applied[id]++ // a receiver's own dedupe: the effect once per delivery id
		n := len(got)
		mu.Unlock()
		switch n {
		case 1:
			close(firstHeld)
			select { // taken, not answered: turnlog dies before it hears back
			case <-release:
			case <-r.Context().Done():
			}
			return
		case 2:
			close(second)
		}
	}))
	defer srv.Close()
	defer close(release)

	b := setupCrash(t)
	cfg := strings.Replace(crashConfig, "    tools:\n", fmt.Sprintf("    webhooks:\n      ops: {url: \"%s/hooks/turnlog\", events: [turn.committed], secret_env: TURNLOG_HOOK_SECRET, timeout: 1m}\n    tools:\n", srv.URL), 1)
	if err := os.WriteFile(b.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, base := b.serveChild(t)
	session := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(callServer(t, "POST", base+"/v1/sessions", `{"app":"crash"}`))[1]
	if out := callServer(t, "POST", base+"/v1/sessions/"+session+"/turns", `{"input":"hi"}`); !strings.Contains(out, `"status":"completed"`) {
		t.Fatalf("turn: %s", out)
	}
	select {
	case <-firstHeld:
	case <-time.After(30 * time.Second):
		t.Fatal("the webhook was never sent")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	db, err := sql.Open("sqlite", "file:"+b.db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var status string
	var attempts int
	if err := db.QueryRow(`SELECT o.status, o.attempts FROM webhook_outbox o JOIN events e ON e.session_id = o.session_id AND e.seq = o.seq
		WHERE e.type = 'TurnCommitted' AND o.session_id = ?`, session).Scan(&status, &attempts); err != nil || status != "sending" || attempts != 1 {
		t.Fatalf("after the kill: outbox %s, %d attempts (%v); want one held attempt beside the committed turn", status, attempts, err)
	}

	cmd, _ = b.serveChild(t)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	select {
	case <-second:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery was not sent again after the restart")
	}
	mu.Lock()
	if len(got) != 2 || got[0].id != got[1].id || got[0].body != got[1].body || len(applied) != 1 || !strings.Contains(got[0].body, `"output":"hello"`) {
		t.Fatalf("deliveries %v: want the same id and body twice", got)
	}
	mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := db.QueryRow(`SELECT status, attempts FROM webhook_outbox WHERE session_id = ?`, session).Scan(&status, &attempts); err == nil && status == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the outbox says %s after the second attempt", status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if attempts != 2 {
		t.Fatalf("delivered after %d attempts, want 2", attempts)
	}
}
