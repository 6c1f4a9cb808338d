package postgres_test

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// movingEngine is an engine of the demo-like app the move test fills a store with:
// a refund that asks a person, and a report whose output is too big for an event.
func movingEngine(t *testing.T, s fsm.Store, name string) *fsm.Engine {
	t.Helper()
	tools := []fsm.Tool{
		storetest.Approval{Tool: functool.MustNew("refund", "refunds", func(context.Context, noArgs) (any, error) { return "refunded", nil })},
		functool.MustNew("report", "a long report", func(context.Context, noArgs) (any, error) {
			return strings.Repeat("quarterly figures ", 8000), nil // past the blob threshold
		}),
	}
	return engineOn(t, s, name, []scripted.Rule{
		{When: scripted.When{AfterTool: "*"}, Reply: "done"},
		{When: scripted.When{Input: "^refund"}, Tools: []scripted.ToolCall{{Name: "refund", Arguments: `{}`}}},
		{When: scripted.When{Input: "^report"}, Tools: []scripted.ToolCall{{Name: "report", Arguments: `{}`}}},
		{Reply: "hi"},
	}, tools, fsm.Options{})
}

// movedStore is what the move test reads from both stores.
type movedStore interface {
	storetest.Store
	MemoryVectors(ctx context.Context, app, owner string, limit int) ([]projection.MemoryHit, error)
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fillForMove gives a SQLite store one of everything a move carries, and returns
// the sessions that remain and the turn that waits for a person.
func fillForMove(t *testing.T, src *sqlite.Store) (sessions []string, waiting string) {
	ctx := context.Background()
	src.RouteWebhooks(func(app, event string) []string { return []string{"hook"} })
	e := movingEngine(t, src, "old")
	run := func(session, input string) *fsm.Result {
		t.Helper()
		st, err := e.StartTurn(ctx, session, input)
		noErr(t, err)
		res, err := st.Wait()
		noErr(t, err)
		return res
	}
	create := func(owner string) string {
		t.Helper()
		s, err := e.CreateSession(ctx, "demo", owner, nil)
		noErr(t, err)
		return s.ID
	}
	a := create("alice")
	first := run(a, "hello")
	run(a, "report it")
	branch, err := e.Branch(ctx, a, "alice", fsm.BranchPoint{Turn: first.TurnID}, nil)
	noErr(t, err)
	run(branch.ID, "and then")
	b := create("bob")
	asked := run(b, "refund it")
	if asked.Status != fsm.StatusSuspended {
		t.Fatalf("the refund: %+v", asked)
	}
	_, err = e.Enqueue(ctx, b, "bob", "after the refund", false)
	noErr(t, err)
	gone := create("carol")
	run(gone, "forget me")
	_, err = e.EraseSession(ctx, gone, "carol", false)
	noErr(t, err)
	for _, m := range []projection.Memory{
		{App: "demo", Owner: "alice", Key: a + "/t/1", Label: "diet", Text: "alice eats no peanuts", At: time.Now(), Vector: []float32{0.5, -1}},
		{App: "demo", Owner: "alice", Key: a + "/t/2", Text: "alice flies on tuesdays", At: time.Now()},
		{App: "demo", Owner: "bob", Key: b + "/t/1", Text: "bob eats peanuts", At: time.Now()},
	} {
		_, _, err := src.SaveMemory(ctx, m)
		noErr(t, err)
	}
	now := time.Now()
	rec := projection.IdempotencyRecord{Owner: "alice", Key: "k-1", Route: "POST /v1/sessions", BodyHash: "h", CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	_, _, err = src.ClaimKey(ctx, rec, now)
	noErr(t, err)
	noErr(t, src.SetKeyTarget(ctx, "alice", "k-1", now, a, first.TurnID, 0))
	return []string{a, branch.ID, b}, asked.TurnID
}

// TestAStoreMovesToPostgres: a SQLite store's sessions (a branch and its source, a
// blob, a turn waiting for a person and the input queued behind it), memories,
// idempotency records, webhook deliveries and erasure receipts arrive in PostgreSQL
// as they were — the same events with the same times, the same read models — and the
// moved deployment goes on: the waiting turn is answered there and the queue runs.
// A second move into the filled database is refused and changes nothing.
func TestAStoreMovesToPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := sqlite.MustOpen(t, sqlite.Options{})
	sessions, waiting := fillForMove(t, src)
	dst := postgres.MustOpen(t, postgres.Options{})
	move := func() (postgres.Loaded, error) {
		var loaded postgres.Loaded
		err := src.Snapshot(ctx, func(snap sqlrows.Snapshot) error {
			var err error
			loaded, err = dst.Load(ctx, snap)
			return err
		})
		return loaded, err
	}
	loaded, err := move()
	noErr(t, err)
	if loaded.Sessions != 3 || loaded.Rows["blobs"] == 0 || loaded.Rows["memories"] != 3 || loaded.Rows["idempotency_keys"] != 1 ||
		loaded.Rows["webhook_outbox"] == 0 || loaded.Rows["erasures"] != 1 {
		t.Fatalf("loaded %+v", loaded)
	}
	same := func(what string, read func(movedStore) (any, error)) {
		t.Helper()
		a, err := read(src)
		noErr(t, err)
		b, err := read(dst)
		noErr(t, err)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s differ:\nsqlite   %+v\npostgres %+v", what, a, b)
		}
	}
	for _, id := range sessions {
		same(id+" session", func(s movedStore) (any, error) { return s.Session(ctx, id) })
		same(id+" events", func(s movedStore) (any, error) { return s.Events(ctx, id, 0) })
		same(id+" turns", func(s movedStore) (any, error) { return s.Turns(ctx, id) })
		same(id+" history", func(s movedStore) (any, error) { return s.HistoryRaw(ctx, id) })
		same(id+" interrupts", func(s movedStore) (any, error) { return s.PendingInterrupts(ctx, id) })
		same(id+" queue", func(s movedStore) (any, error) { return s.Queued(ctx, id) })
		same(id+" audit", func(s movedStore) (any, error) { return s.Audit(ctx, id) })
	}
	for _, owner := range []string{"alice", "bob"} {
		same(owner+"'s sessions", func(s movedStore) (any, error) { return s.SessionPage(ctx, owner, "demo", time.Time{}, "", 100) })
		same(owner+"'s memories", func(s movedStore) (any, error) {
			hits, err := s.SearchMemory(ctx, "demo", owner, "peanuts tuesdays", 10)
			return memoryIDs(hits), err
		})
		same(owner+"'s vectors", func(s movedStore) (any, error) { return s.MemoryVectors(ctx, "demo", owner, 10) })
	}
	if hits, err := dst.SearchMemory(ctx, "demo", "alice", "peanuts tuesdays", 10); err != nil || len(hits) != 2 {
		t.Fatalf("alice's memories in postgres: %+v %v", hits, err)
	}
	if id, _, err := dst.SaveMemory(ctx, projection.Memory{App: "demo", Owner: "bob", Key: "later", Text: "new", At: time.Now()}); err != nil || id != 4 {
		t.Fatalf("a memory saved after the move: id %d, %v (the copied ids are 1-3)", id, err)
	}
	same("the key", func(s movedStore) (any, error) { return s.Key(ctx, "alice", "k-1") })
	same("deliveries", func(s movedStore) (any, error) { return s.Deliveries(ctx, projection.DeliveryFilter{Limit: 100}) })
	same("receipts", func(s movedStore) (any, error) { return s.Erasures(ctx, "", 100) })

	if _, err := move(); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("a second move: %v", err)
	}
	same("events after the refused move", func(s movedStore) (any, error) { return s.Events(ctx, sessions[0], 0) })

	e := movingEngine(t, dst, "new")
	interrupts, err := dst.PendingInterrupts(ctx, sessions[2])
	noErr(t, err)
	yes := true
	st, err := e.Resume(ctx, sessions[2], "bob", map[string]fsm.Answer{interrupts[0].ID: {Confirmed: &yes}})
	noErr(t, err)
	if res, err := st.Wait(); err != nil || res.TurnID != waiting || res.Status != fsm.StatusCompleted || res.Output != "done" {
		t.Fatalf("the answered turn: %+v %v", res, err)
	}
	if turns := queueRan(t, dst, sessions[2]); len(turns) != 2 || turns[1].Input != "after the refund" {
		t.Fatalf("turns after the move %+v", turns)
	}
}

// memoryIDs are the ids of the hits, sorted: stores may rank them differently.
func memoryIDs(hits []projection.MemoryHit) []int64 {
	var ids []int64
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
