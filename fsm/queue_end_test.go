package fsm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// enqueueAtEnd is a store that, once, right after the append that ends a turn has
// committed — before the engine lets the session go —, queues input on the session,
// and holds the engine until the queue's kick has looked at the session.
type enqueueAtEnd struct {
	*sqlite.Store
	enqueue func(session string)
	once    sync.Once
	armed   bool
	looked  chan struct{}
}

func (s *enqueueAtEnd) Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error) {
	out, err := s.Store.Append(ctx, session, after, evs)
	if err == nil && s.armed && evs[len(evs)-1].Type == events.TypeTurnCommitted {
		s.once.Do(func() {
			s.enqueue(session)
			<-s.looked // the kick saw the session's last turn ended, and the run still here
		})
	}
	return out, err
}

func (s *enqueueAtEnd) LastTurn(ctx context.Context, session string) (projection.Turn, error) {
	t, err := s.Store.LastTurn(ctx, session)
	if s.armed && t.Status == projection.TurnCompleted {
		select {
		case s.looked <- struct{}{}:
		default:
		}
	}
	return t, err
}

// TestInputQueuedAsTheTurnEndsRuns: input queued after a turn's last append, while
// its run still holds the session, runs — the run's end looks at the queue although
// it found it empty as the turn began.
func TestInputQueuedAsTheTurnEndsRuns(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	at := &enqueueAtEnd{Store: store, looked: make(chan struct{}, 1)} // the kick may look before the append waits
	e := echoEngine(t, at)
	ctx := context.Background()
	s, err := e.CreateSession(ctx, "test", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan fsm.Queued, 1)
	at.enqueue = func(session string) {
		q, err := e.Enqueue(ctx, session, "alice", "and then this", false)
		if err != nil {
			t.Error(err)
		}
		queued <- q
	}
	at.armed = true
	st, err := e.StartTurn(ctx, s.ID, "first")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := st.Wait(); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("the first turn: %+v %v", res, err)
	}
	turns := settled(t, store, s.ID, 2)
	if q := <-queued; turns[1].ID != q.TurnID || turns[1].Status != projection.TurnCompleted || turns[1].Input != "and then this" {
		t.Fatalf("the input queued as the first turn ended: %+v", turns)
	}
}
