package fsm_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// historyReads counts the conversations the engine reads from the store.
type historyReads struct {
	*sqlite.Store
	n atomic.Int64
}

func (s *historyReads) History(ctx context.Context, session string) ([]events.Item, error) {
	s.n.Add(1)
	return s.Store.History(ctx, session)
}

// TestTheConversationCacheIsBounded: with CacheSessions 5, turns on 20 sessions leave
// 5 conversations in memory, those of the 5 sessions used last: their next turns read
// no history, and the next turn of a session used long ago reads it again.
func TestTheConversationCacheIsBounded(t *testing.T) {
	t.Parallel()
	sq, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	store := &historyReads{Store: sq}
	agent := storetest.StepAgent(t, true)
	app := &fsm.App{Name: "test", StartAgent: agent.Name, Agents: map[string]*fsm.Agent{agent.Name: agent}}
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("c"), CacheSessions: 5})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	turn := func(session string) {
		t.Helper()
		if res, err := e.RunTurn(ctx, session, "go"); err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("turn: %+v %v", res, err)
		}
	}
	var ids []string
	for range 20 {
		s, err := e.CreateSession(ctx, "test", "alice", nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		turn(s.ID)
	}
	if n := e.CachedSessions(); n != 5 {
		t.Fatalf("%d conversations in memory, with a bound of 5", n)
	}
	before := store.n.Load()
	for _, id := range ids[15:] {
		turn(id)
	}
	if read := store.n.Load() - before; read != 0 {
		t.Fatalf("the 5 sessions used last read their history %d times", read)
	}
	turn(ids[0])
	if read := store.n.Load() - before; read != 1 {
		t.Fatalf("a session used long ago read its history %d times, not once", read)
	}
	if n := e.CachedSessions(); n != 5 {
		t.Fatalf("%d conversations in memory after, with a bound of 5", n)
	}
}
