package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/client"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/projection"
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

// staleTurnReader answers its first lookup of one turn with what the log said just
// before that turn left its queue and started: not found.
type staleTurnReader struct {
	httpapi.Reader
	turn   chan string // the turn to answer stale, once known
	once   sync.Once
	before func() // runs before the stale answer: the turn starts
}

func (r *staleTurnReader) Turn(ctx context.Context, session, turn string) (projection.Turn, error) {
	select {
	case want := <-r.turn:
		if want == turn {
			stale := false
			r.once.Do(func() { stale = true })
			if stale {
				r.before()
				return projection.Turn{}, events.Errorf(events.CodeNotFound, "turn %s of session %s not found", turn, session)
			}
		}
		r.turn <- want
	default:
	}
	return r.Reader.Turn(ctx, session, turn)
}

// TestAQueuedTurnThatStartsMidLookupIsFound: GET …/turns/{id}?wait= for a queued
// input whose turn leaves the queue and starts between the API's read of the turns
// and its read of the queue answers with the turn, not 404.
func TestAQueuedTurnThatStartsMidLookupIsFound(t *testing.T) {
	t.Parallel()
	stale := &staleTurnReader{turn: make(chan string, 1)}
	b := setupReading(t, nil, func(r httpapi.Reader) httpapi.Reader { stale.Reader = r; return stale })
	gate := b.newSession(t, "key-alice", "gate")
	first := make(chan response, 1)
	go func() { first <- b.do(t, "POST", "/v1/sessions/"+gate+"/turns", "key-alice", `{"input": "go"}`) }()
	<-b.entered
	ctx, c := context.Background(), b.as("key-alice")
	q, err := c.RunTurn(ctx, gate, client.TurnRequest{Input: "one", OnBusy: "enqueue"})
	if err != nil || q.Status != "queued" {
		t.Fatalf("enqueue: %+v %v", q, err)
	}
	stale.before = func() { // the first turn ends; the queued one starts before the stale answer
		close(b.release)
		wake, stop := b.store.Watch(gate)
		defer stop()
		for {
			if _, err := b.store.Turn(ctx, gate, q.TurnID); err == nil {
				return
			}
			select {
			case <-wake:
			case <-time.After(30 * time.Second):
				t.Error("the queued turn never started")
				return
			}
		}
	}
	stale.turn <- q.TurnID
	done, err := c.Turn(ctx, gate, q.TurnID, 30*time.Second)
	if err != nil || done.Status != "completed" || done.TurnID != q.TurnID {
		t.Fatalf("the queued turn, looked up as it started: %+v %v", done, err)
	}
	if r := <-first; r.body["status"] != "completed" {
		t.Fatalf("first: %s", r.raw)
	}
}
