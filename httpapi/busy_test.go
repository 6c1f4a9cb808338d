package httpapi_test

import (
	"net/http"
	"testing"
)

// TestBusySession: input for a session whose turn runs is refused by default (409);
// with on_busy: enqueue it is queued (202, its turn's Location and position; the
// session counts it) and runs once the turn ends; a queued input can be canceled.
func TestBusySession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := b.newSession(t, "key-alice", "gate")
	turns := "/v1/sessions/" + gate + "/turns"
	first := make(chan response, 1)
	go func() { first <- b.do(t, "POST", turns, "key-alice", `{"input": "go"}`) }()
	<-b.entered
	if r := b.do(t, "POST", turns, "key-alice", `{"input": "hello"}`); r.status != http.StatusConflict {
		t.Fatalf("default on_busy: %d %s", r.status, r.raw)
	}
	if r := b.do(t, "POST", turns, "key-alice", `{"input": "hello", "on_busy": "later"}`); r.status != http.StatusBadRequest {
		t.Fatalf("an unknown on_busy: %d %s", r.status, r.raw)
	}
	q1 := b.do(t, "POST", turns, "key-alice", `{"input": "one", "on_busy": "enqueue"}`)
	q2 := b.do(t, "POST", turns, "key-alice", `{"input": "two", "on_busy": "enqueue"}`)
	if q1.status != http.StatusAccepted || q1.body["status"] != "queued" || q1.body["position"] != 1.0 || q2.body["position"] != 2.0 || q1.header.Get("Location") == "" {
		t.Fatalf("enqueue: %s / %s", q1.raw, q2.raw)
	}
	if s := b.do(t, "GET", "/v1/sessions/"+gate, "key-alice", ""); s.body["queued"] != 2.0 {
		t.Fatalf("session: %s", s.raw)
	}
	if r := b.do(t, "GET", q1.header.Get("Location"), "key-alice", ""); r.body["status"] != "queued" {
		t.Fatalf("a queued turn's resource: %s", r.raw)
	}
	if r := b.do(t, "POST", turns+"/"+q2.body["turn_id"].(string)+"/cancel", "key-alice", `{"reason": "never mind"}`); r.status != 200 || r.body["status"] != "canceled" {
		t.Fatalf("cancel a queued input: %s", r.raw)
	}
	close(b.release)
	if r := <-first; r.body["status"] != "completed" {
		t.Fatalf("first: %s", r.raw)
	}
	done := b.do(t, "GET", q1.header.Get("Location")+"?wait=30s", "key-alice", "")
	if done.body["status"] != "completed" || done.body["turn_id"] != q1.body["turn_id"] {
		t.Fatalf("the queued turn: %s", done.raw)
	}
	if n := b.turnCount(t, gate); n != 2 {
		t.Fatalf("%d turns (the canceled input must not run)", n)
	}
}
