package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/turnlog/turnlog/client"
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
	ctx, c := context.Background(), b.as("key-alice")
	q1, err1 := c.RunTurn(ctx, gate, client.TurnRequest{Input: "one", OnBusy: "enqueue"})
	q2, err2 := c.RunTurn(ctx, gate, client.TurnRequest{Input: "two", OnBusy: "enqueue"})
	if err1 != nil || err2 != nil || q1.Status != "queued" || q1.Position != 1 || q2.Position != 2 || q1.Location != "/v1/sessions/"+gate+"/turns/"+q1.TurnID {
		t.Fatalf("enqueue: %+v %v / %+v %v", q1, err1, q2, err2)
	}
	if s, err := c.Session(ctx, gate); err != nil || s.Queued != 2 {
		t.Fatalf("session: %+v %v", s, err)
	}
	if r, err := c.Turn(ctx, gate, q1.TurnID, 0); err != nil || r.Status != "queued" {
		t.Fatalf("a queued turn's resource: %+v %v", r, err)
	}
	if r, err := c.CancelTurn(ctx, gate, q2.TurnID, "never mind"); err != nil || r.Status != "canceled" {
		t.Fatalf("cancel a queued input: %+v %v", r, err)
	}
	close(b.release)
	if r := <-first; r.body["status"] != "completed" {
		t.Fatalf("first: %s", r.raw)
	}
	if done, err := c.Turn(ctx, gate, q1.TurnID, 30*time.Second); err != nil || done.Status != "completed" || done.TurnID != q1.TurnID {
		t.Fatalf("the queued turn: %+v %v", done, err)
	}
	if n := b.turnCount(t, gate); n != 2 {
		t.Fatalf("%d turns (the canceled input must not run)", n)
	}
}
