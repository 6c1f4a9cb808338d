package sqlite_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
)

// TestUnsyncedAppendsSkipOnlyTheirOwnSync: an unsynced append is committed and
// readable at once without waiting for the disk; an ordinary append after it waits,
// and a batch mixing both waits. With synchronous NORMAL nothing waits.
func TestUnsyncedAppendsSkipOnlyTheirOwnSync(t *testing.T) {
	t.Parallel()
	b := setup(t, sqlite.Options{})
	createSession(t, b, "s1")
	turn := func(n int) []events.Event {
		return []events.Event{events.MustNew(fmt.Sprintf("t%d", n), "", &events.TurnStarted{Input: "hi", Agent: "support"})}
	}
	all0, synced0 := b.store.Commits()
	if _, err := b.store.AppendUnsynced(b.ctx, "s1", 1, turn(1)); err != nil {
		t.Fatal(err)
	}
	if evs, err := b.store.Events(b.ctx, "s1", 1); err != nil || len(evs) != 1 {
		t.Fatalf("an unsynced append is not readable: %v %v", evs, err)
	}
	all1, synced1 := b.store.Commits()
	if all1 != all0+1 || synced1 != synced0 {
		t.Fatalf("unsynced append: commits %d→%d, synced %d→%d (want +1 and +0)", all0, all1, synced0, synced1)
	}
	if _, err := b.store.Append(b.ctx, "s1", 2, turn(2)); err != nil {
		t.Fatal(err)
	}
	if all2, synced2 := b.store.Commits(); all2 != all1+1 || synced2 != synced1+1 {
		t.Fatalf("a synced append after it: commits %d→%d, synced %d→%d (want +1 and +1)", all1, all2, synced1, synced2)
	}
	// Many sessions at once: whatever shares a commit with a synced append is synced.
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		id := string(rune('a' + i))
		createSession(t, b, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			appendFn := b.store.Append
			if i%2 == 0 {
				appendFn = b.store.AppendUnsynced
			}
			if _, err := appendFn(b.ctx, id, 1, turn(1)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if all, synced := b.store.Commits(); all-synced > all1-synced1+10 {
		t.Fatalf("more unsynced commits (%d) than unsynced appends allow", all-synced)
	}

	n := setup(t, sqlite.Options{Synchronous: "NORMAL"})
	createSession(t, n, "s1")
	n.store.Append(n.ctx, "s1", 1, turn(1))
	if all, synced := n.store.Commits(); all != 2 || synced != 0 {
		t.Fatalf("synchronous NORMAL: %d commits, %d synced (want 2 and 0)", all, synced)
	}
	if _, err := n.store.AppendUnsynced(n.ctx, "", 0, turn(1)); !events.IsCode(err, events.CodeInvalid) {
		t.Fatalf("an unsynced append without a session: err = %v", err)
	}
}
