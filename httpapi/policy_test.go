package httpapi_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	_ "modernc.org/sqlite"
)

// requestTap keeps what every wrapped model was asked.
type requestTap struct {
	mu       sync.Mutex
	requests []string
}

func (tap *requestTap) wrap(_ string, m fsm.Model) fsm.Model {
	return modelTap{tap: tap, next: m}
}

type modelTap struct {
	tap  *requestTap
	next fsm.Model
}

func (m modelTap) Call(ctx context.Context, r fsm.ModelRequest) (fsm.ModelResponse, error) {
	raw, err := json.Marshal(struct {
		Instructions string
		Items        any
		Tools        any
	}{r.Instructions, r.Items, r.Tools})
	if err != nil {
		return fsm.ModelResponse{}, err
	}
	m.tap.mu.Lock()
	m.tap.requests = append(m.tap.requests, string(raw))
	m.tap.mu.Unlock()
	return m.next.Call(ctx, r)
}

func (tap *requestTap) all() string {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return strings.Join(tap.requests, "\n")
}

// TestRedactedSecretReachesNoOne: the demo's order_integration tool returns an API key
// and the user pastes it too; the demo's guardrail policy redacts it, so it is in no
// row of the events table, not in the history, in no model request, and in no SSE event
// — nor anywhere in the database file.
func TestRedactedSecretReachesNoOne(t *testing.T) {
	t.Parallel()
	tap := &requestTap{}
	b := setupWith(t, tap.wrap)
	id := b.newSession(t, "key-alice", "demo")
	var sse strings.Builder
	for ev := range b.stream(t, context.Background(), "POST", "/v1/sessions/"+id+"/turns",
		`{"input":"my key is `+demo.IntegrationKey+`; show the integration of order 42","stream":true}`, nil) {
		sse.WriteString(ev.name + " " + ev.data + "\n")
	}
	history := b.do(t, "GET", "/v1/sessions/"+id+"/history", "key-alice", "").raw

	db, err := sql.Open("sqlite", "file:"+b.dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows string
	if err := db.QueryRow(`SELECT group_concat(data, char(10)) FROM events WHERE session_id = ?`, id).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{"events table": rows, "history": history, "model requests": tap.all(), "SSE stream": sse.String()} {
		if strings.Contains(text, "sk-live-") {
			t.Fatalf("the secret reached the %s:\n%s", where, text)
		}
		if !strings.Contains(text, "[REDACTED:api-keys]") {
			t.Fatalf("the %s show no redaction (did the turn run?):\n%s", where, text)
		}
	}
	if !strings.Contains(sse.String(), "with the key [REDACTED:api-keys].") || !strings.Contains(rows, `"rule":"api-keys","target":"tool_output"`) {
		t.Fatalf("the answer or the record of the redaction is missing:\n%s\n%s", sse.String(), rows)
	}
	b.store.Close()
	for _, file := range []string{b.dbPath, b.dbPath + "-wal"} {
		raw, err := os.ReadFile(file)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "sk-live-") {
			t.Fatalf("the secret is in %s", file)
		}
	}
}
