package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// TestARepeatIsTheSameRequestHoweverItAsks: a repeat with the same Idempotency-Key
// that asks for a stream where the first asked for JSON (or the other way round) is
// the same request: it gets the same turn, and nothing runs twice.
func TestARepeatIsTheSameRequestHoweverItAsks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	session := b.newSession(t, "key-alice", "demo")
	path := "/v1/sessions/" + session + "/turns"
	first := b.doKeyed(t, "POST", path, "same-1", `{"input":"where is order 42?"}`)
	if first.status != http.StatusOK {
		t.Fatalf("first: %d %s", first.status, first.raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	streamed := readStream(b.stream(t, ctx, "POST", path, `{"input":"where is order 42?","stream":true}`, map[string]string{"Idempotency-Key": "same-1"}), nil)
	if len(streamed) == 0 || streamed[len(streamed)-1].name != "turn_committed" || !strings.Contains(streamed[0].data, first.body["turn_id"].(string)) {
		t.Fatalf("the repeat asking for a stream: %v", names(streamed))
	}
	again := b.doKeyed(t, "POST", path, "same-1", `{"stream":false,"input":"where is order 42?"}`)
	if again.status != http.StatusOK || again.body["turn_id"] != first.body["turn_id"] {
		t.Fatalf("the repeat with stream false: %d %s", again.status, again.raw)
	}
	if n := b.turnCount(t, session); n != 1 {
		t.Fatalf("%d turns, want 1", n)
	}
	if r := b.doKeyed(t, "POST", path, "same-1", `{"input":"another"}`); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("the key with another input: %d %s, want 422", r.status, r.raw)
	}
}

// TestAKeyKeptBeforeStillMatches: a key whose record was hashed over the whole body,
// stream included (as turnlog kept keys before), still matches a repeat of that body.
func TestAKeyKeptBeforeStillMatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	session := b.newSession(t, "key-alice", "demo")
	path := "/v1/sessions/" + session + "/turns"
	first := b.doKeyed(t, "POST", path, "old-1", `{"input":"hello"}`)
	rec, err := b.store.Key(context.Background(), "alice", "old-1")
	if err != nil {
		t.Fatal(err)
	}
	// Keep the record as an older turnlog would have: hashed with "stream": true.
	old := projection.IdempotencyRecord{Owner: "alice", Key: "old-2", Route: rec.Route, BodyHash: wholeBodyHash(t, `{"input":"hello","stream":true}`),
		CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt}
	if _, claimed, err := b.store.ClaimKey(context.Background(), old, rec.CreatedAt); err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if err := b.store.SetKeyTarget(context.Background(), "alice", "old-2", rec.CreatedAt, session, first.body["turn_id"].(string), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := readStream(b.stream(t, ctx, "POST", path, `{"input":"hello","stream":true}`, map[string]string{"Idempotency-Key": "old-2"}), nil)
	if len(got) == 0 || got[len(got)-1].name != "turn_committed" {
		t.Fatalf("a repeat of a key kept before: %v", names(got))
	}
	if n := b.turnCount(t, session); n != 1 {
		t.Fatalf("%d turns, want 1", n)
	}
}

// TestAQueuedInputThatAsksForAStreamGetsOne: an input queued behind a running turn
// (on_busy: enqueue) that asks for a stream gets SSE whose first event, queued (no
// id), says where it waits; then its turn, once it starts, to its end. A reconnect
// with the same key while it waits attaches to the same input.
func TestAQueuedInputThatAsksForAStreamGetsOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := b.newSession(t, "key-alice", "gate")
	path := "/v1/sessions/" + gate + "/turns"
	first := make(chan response, 1)
	go func() { first <- b.do(t, "POST", path, "key-alice", `{"input":"go"}`) }()
	<-b.entered
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := `{"input":"next","on_busy":"enqueue","stream":true}`
	queued := b.stream(t, ctx, "POST", path, body, map[string]string{"Idempotency-Key": "q-1"})
	head := <-queued
	var q struct {
		TurnID   string `json:"turn_id"`
		Status   string
		Position int
	}
	if head.name != "queued" || head.id != 0 || json.Unmarshal([]byte(head.data), &q) != nil || q.Status != "queued" || q.Position != 1 {
		t.Fatalf("the first event: %+v", head)
	}
	reconnect := b.stream(t, ctx, "POST", path, body, map[string]string{"Idempotency-Key": "q-1"})
	if again := <-reconnect; again.name != "queued" || !strings.Contains(again.data, q.TurnID) {
		t.Fatalf("the reconnect's first event: %+v", again)
	}
	close(b.release)
	for _, s := range []<-chan sseEvent{queued, reconnect} {
		rest := readStream(s, nil)
		if len(rest) == 0 || rest[0].name != "turn_started" || rest[len(rest)-1].name != "turn_committed" || !strings.Contains(rest[0].data, q.TurnID) {
			t.Fatalf("after queued: %v", names(rest))
		}
	}
	if r := <-first; r.body["status"] != "completed" {
		t.Fatalf("the first turn: %s", r.raw)
	}
	if n := b.turnCount(t, gate); n != 2 {
		t.Fatalf("%d turns, want 2", n)
	}
}

// wholeBodyHash is the hash an Idempotency-Key's record kept of a body before
// "stream" was left out of it: sha256 of the whole canonical body.
func wholeBodyHash(t *testing.T, body string) string {
	t.Helper()
	canon, err := events.Canonicalize([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}
