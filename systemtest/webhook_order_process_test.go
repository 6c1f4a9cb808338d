package systemtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
)

const orderConfig = `
apps:
  chat:
    start_agent: a
    llms:
      script: {provider: scripted, rules: [{reply: "hello"}]}
    agents:
      a: {llm: script}
    webhooks:
      ops: {url: "%s/hook", secret_env: TURNLOG_HOOK_SECRET, timeout: 1s, backoff: 50ms, max_backoff: 200ms, max_attempts: 1000}
`

// TestWebhooksArriveInOrderPerSession: two real nodes on one PostgreSQL database
// deliver the webhooks of six sessions' turns, taken through both nodes, to a
// receiver that fails its first 40 requests and then recovers; one node is killed
// with SIGKILL midway and started again. The receiver sees every session's seqs
// never go back (a repeat of the last is at-least-once) and every turn's end at
// least once.
func TestWebhooksArriveInOrderPerSession(t *testing.T) {
	t.Setenv("TURNLOG_HOOK_SECRET", "a-webhook-secret-of-some-length")
	var mu sync.Mutex
	seen := map[string][]int64{} // session → seqs in arrival order
	requests := 0
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Session string `json:"session_id"`
			Seq     int64  `json:"seq"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &p)
		mu.Lock()
		requests++
		failing := requests <= 40
		if !failing {
			seen[p.Session] = append(seen[p.Session], p.Seq)
		}
		mu.Unlock()
		if failing {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		time.Sleep(5 * time.Millisecond) // a receiver that takes a moment: attempts overlap
	}))
	defer receiver.Close()

	dir := t.TempDir()
	cfg, keys := filepath.Join(dir, "agent.yaml"), filepath.Join(dir, "keys")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(orderConfig, receiver.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte("key-alice=alice:admin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, dir, postgres.TestSchemaDSN(t), "--config", cfg, "--api-keys-file", keys, "--lease-ttl", "2s")
	c.start(0)
	c.start(1)
	client := &http.Client{Timeout: 30 * time.Second}
	var sessions []string
	for i := 0; i < 6; i++ {
		status, body := apiCall{method: "POST", path: "/v1/sessions", body: map[string]any{"app": "chat"}}.send(client, c.urls()[i%2])
		if status != http.StatusCreated {
			t.Fatalf("create: %d %v\n%s", status, body, c.logs())
		}
		sessions = append(sessions, body["id"].(string))
	}
	committed := map[string][]int64{}
	turns := func(round int) {
		for i, s := range sessions {
			urls := c.urls()
			status, body := apiCall{method: "POST", path: "/v1/sessions/" + s + "/turns", body: map[string]any{"input": "hi"}}.send(client, urls[(i+round)%len(urls)])
			if status != http.StatusOK || body["status"] != "completed" {
				t.Fatalf("turn: %d %v\n%s", status, body, c.logs())
			}
		}
	}
	for round := 0; round < 3; round++ {
		turns(round)
	}
	c.kill(0) // a node dies with deliveries of its own in flight
	c.start(0)
	for round := 3; round < 6; round++ {
		turns(round)
	}
	// Each session's committed turns, from its log.
	for _, s := range sessions {
		status, body := apiCall{method: "GET", path: "/v1/sessions/" + s + "/events"}.send(client, c.urls()[0])
		if status != http.StatusOK {
			t.Fatalf("events: %d", status)
		}
		for _, e := range body["events"].([]any) {
			ev := e.(map[string]any)
			if ev["type"] == "TurnCommitted" {
				committed[s] = append(committed[s], int64(ev["seq"].(float64)))
			}
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, body := apiCall{method: "GET", path: "/v1/webhooks/deliveries?status=delivered&limit=100"}.send(client, c.urls()[1])
		list, _ := body["deliveries"].([]any)
		if status == http.StatusOK && len(list) == 6*6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries delivered\n%s", len(list), 6*6, c.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sessions {
		got := seen[s]
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				t.Errorf("session %s: the receiver saw seqs %v: %d after %d", s, got, got[i], got[i-1])
				break
			}
		}
		for _, seq := range committed[s] {
			if !containsSeq(got, seq) {
				t.Errorf("session %s: seq %d never arrived (saw %v)", s, seq, got)
			}
		}
	}
	t.Logf("%d requests, %d of them failed", requests, 40)
}

func containsSeq(seqs []int64, seq int64) bool {
	for _, s := range seqs {
		if s == seq {
			return true
		}
	}
	return false
}
