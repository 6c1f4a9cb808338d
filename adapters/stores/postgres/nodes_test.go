package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

type noArgs struct{}

// node is an engine of its own on the shared store, as one turnlog process is.
func node(t *testing.T, s fsm.Store, name string, gate <-chan struct{}, entered chan<- struct{}) *fsm.Engine {
	t.Helper()
	return nodeWithTTL(t, s, name, gate, entered, 0)
}

func nodeWithTTL(t *testing.T, s fsm.Store, name string, gate <-chan struct{}, entered chan<- struct{}, ttl time.Duration) *fsm.Engine {
	t.Helper()
	rules := []scripted.Rule{
		{When: scripted.When{AfterTool: "*"}, Reply: "done"},
		{When: scripted.When{Input: "^slow"}, Tools: []scripted.ToolCall{{Name: "slow", Arguments: `{}`}}},
		{When: scripted.When{Input: "^refund"}, Tools: []scripted.ToolCall{{Name: "refund", Arguments: `{}`}}},
		{Reply: "hi"},
	}
	tools := []fsm.Tool{
		functool.MustNew("slow", "waits", func(ctx context.Context, _ noArgs) (any, error) {
			entered <- struct{}{}
			select {
			case <-gate:
			case <-ctx.Done(): // its turn was canceled
			}
			return "ok", nil
		}),
		storetest.Approval{Tool: functool.MustNew("refund", "refunds", func(context.Context, noArgs) (any, error) { return "refunded", nil })},
	}
	return engineOn(t, s, name, rules, tools, fsm.Options{LeaseTTL: ttl})
}

// engineOn is an engine named name on s, of one app ("demo", agent "main") whose
// scripted model follows rules and calls tools; opts may pin the clock or the lease.
func engineOn(t *testing.T, s fsm.Store, name string, rules []scripted.Rule, tools []fsm.Tool, opts fsm.Options) *fsm.Engine {
	t.Helper()
	model, err := scripted.New(rules)
	if err != nil {
		t.Fatal(err)
	}
	app := &fsm.App{Name: "demo", StartAgent: "main", Agents: map[string]*fsm.Agent{"main": {Name: "main", LLM: "m", Model: model, Tools: tools, MaxTurns: 4, MaxToolCalls: 4}}}
	var n atomic.Int64
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	opts.NodeID, opts.NewID = name, func() string { return fmt.Sprintf("%s-%06d", name, n.Add(1)) }
	if c, ok := s.(fsm.Cluster); ok { // a PostgreSQL store: this engine is one of its nodes
		opts.Cluster = c
	}
	e, err := fsm.New(s, []*fsm.App{app}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// slowTurn starts a session on node e and a turn of it whose slow tool runs, held.
func slowTurn(t *testing.T, e *fsm.Engine, entered <-chan struct{}) (projection.Session, *fsm.StartedTurn) {
	t.Helper()
	sess, err := e.CreateSession(context.Background(), "demo", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := e.StartTurn(context.Background(), sess.ID, "slow one")
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	return sess, slow
}

// TestOneNodeRunsASessionAtATime: two engines on one database are two nodes. While
// node A runs a session's turn, node B's turn on it is refused; once it ends, node B
// runs the next one, and node A answers the question node B's turn asks.
func TestOneNodeRunsASessionAtATime(t *testing.T) {
	t.Parallel()
	s := postgres.MustOpen(t, postgres.Options{})
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	a, b := node(t, s, "node-a", gate, entered), node(t, s, "node-b", gate, entered)
	ctx := context.Background()
	sess, slow := slowTurn(t, a, entered)
	if _, err := b.StartTurn(ctx, sess.ID, "hello"); !events.IsCode(err, events.CodeConflict) || !strings.Contains(err.Error(), "another node") {
		t.Fatalf("node b starts a turn while node a runs one: %v", err)
	}
	close(gate)
	if res, err := slow.Wait(); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("node a's turn: %+v %v", res, err)
	}
	settled := func(e *fsm.Engine, turn string) {
		seq, _ := s.LastSeq(ctx, sess.ID)
		if err := e.Settled(ctx, sess.ID, turn, seq); err != nil {
			t.Fatal(err)
		}
	}
	settled(a, slow.ID)
	st, err := b.StartTurn(ctx, sess.ID, "refund it")
	if err != nil {
		t.Fatalf("node b once node a's turn ended: %v", err)
	}
	asked, err := st.Wait()
	if err != nil || asked.Status != fsm.StatusSuspended {
		t.Fatalf("node b's refund: %+v %v", asked, err)
	}
	settled(b, st.ID)
	yes := true
	resumed, err := a.Resume(ctx, sess.ID, "alice", map[string]fsm.Answer{asked.Interrupts[0].ID: {Confirmed: &yes}})
	if err != nil {
		t.Fatalf("node a answers node b's question: %v", err)
	}
	if res, err := resumed.Wait(); err != nil || res.Status != fsm.StatusCompleted || res.Output != "done" {
		t.Fatalf("the answered turn: %+v %v", res, err)
	}
}

// TestAnotherNodeRecoversATurnWhoseNodeWentAway: node A's store goes away in the
// middle of a turn whose tool is not idempotent; once A's lease expires node B
// recovers the turn by the replay rule: the model's recorded answer is reused, the
// tool is not run again, and the turn fails with tool_outcome_unknown, once.
func TestAnotherNodeRecoversATurnWhoseNodeWentAway(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	ctx := context.Background()
	storeA, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	storeB := postgres.MustOpenOn(t, dsn)
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	a := nodeWithTTL(t, storeA, "node-a", gate, entered, 500*time.Millisecond)
	b := nodeWithTTL(t, storeB, "node-b", gate, entered, 500*time.Millisecond)
	sess, err := a.CreateSession(ctx, "demo", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := a.StartTurn(ctx, sess.ID, "slow one")
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if res, err := b.Recover(ctx); err != nil || len(res) != 0 {
		t.Fatalf("node b recovers a live node's turn: %+v %v", res, err)
	}
	storeA.Close() // node A goes away: it renews nothing and appends nothing more
	deadline := time.Now().Add(30 * time.Second)
	var recovered []*fsm.Result
	for len(recovered) == 0 {
		if time.Now().After(deadline) {
			db, _ := sql.Open("pgx", dsn)
			var node, exp, now, status string
			db.QueryRow(`SELECT node, expires_at::text, clock_timestamp()::text FROM session_leases WHERE session_id = $1`, sess.ID).Scan(&node, &exp, &now)
			db.QueryRow(`SELECT status FROM proj_turns WHERE session_id = $1`, sess.ID).Scan(&status)
			t.Fatalf("node b never recovered the turn: lease %q %s now %s, turn %s", node, exp, now, status)
		}
		if recovered, err = b.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		if len(recovered) == 0 {
			time.Sleep(50 * time.Millisecond) // the lease has not expired yet: look again
		}
	}
	if r := recovered[0]; r.TurnID != slow.ID || r.Status != fsm.StatusFailed || r.Error == nil || r.Error.Code != events.CodeToolOutcomeUnknown {
		t.Fatalf("recovered: %+v", r)
	}
	close(gate) // node A's tool returns; its result cannot be recorded any more
	slow.Wait()
	evs, err := storeB.Events(ctx, sess.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, ev := range evs {
		counts[ev.Type]++
	}
	if counts[events.TypeModelCalled] != 1 || counts[events.TypeToolResulted] != 0 || counts[events.TypeTurnFailed] != 1 || len(entered) != 0 {
		t.Fatalf("the log after the recovery: %v (the tool ran again: %v)", counts, len(entered) != 0)
	}
}

// TestACancelReachesTheNodeThatRunsTheTurn: a cancel sent to node B for a turn node
// A runs is passed to node A, whose tool's context ends; node B answers with the
// canceled turn.
func TestACancelReachesTheNodeThatRunsTheTurn(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	storeA, storeB := postgres.MustOpenOn(t, dsn), postgres.MustOpenOn(t, dsn)
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	a, b := node(t, storeA, "node-a", gate, entered), node(t, storeB, "node-b", gate, entered)
	ctx := context.Background()
	sess, slow := slowTurn(t, a, entered)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	turn, err := b.Cancel(wctx, sess.ID, slow.ID, "stop it from node b")
	if err != nil || turn.Status != "canceled" || turn.ErrorMessage != "stop it from node b" {
		t.Fatalf("node b's cancel: %+v %v", turn, err)
	}
	if res, err := slow.Wait(); err != nil || res.Error == nil || res.Error.Code != events.CodeCanceled {
		t.Fatalf("node a's turn: %+v %v", res, err)
	}
	close(gate)
}

// heardRelays is node A's store, telling the test each cancel or interrupt another
// node relayed to it, once A has acted on it.
type heardRelays struct {
	*postgres.Store
	heard chan string
}

func (s heardRelays) OnCancel(f func(session, turn, reason string)) {
	s.Store.OnCancel(func(session, turn, reason string) {
		f(session, turn, reason)
		select {
		case s.heard <- reason:
		default: // the test has heard enough: never hold the listener up
		}
	})
}

// TestAnInterruptReachesTheNodeThatRunsTheTurn: input queued on node B with
// interrupt stops the turn node A runs at its next safe point — the running tool
// finishes and is recorded —, and the queued input runs once that turn ends.
func TestAnInterruptReachesTheNodeThatRunsTheTurn(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	storeA := heardRelays{postgres.MustOpenOn(t, dsn), make(chan string, 16)}
	storeB := postgres.MustOpenOn(t, dsn)
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	a := nodeWithTTL(t, storeA, "node-a", gate, entered, 0)
	b := node(t, storeB, "node-b", gate, entered)
	ctx := context.Background()
	sess, slow := slowTurn(t, a, entered)
	q, err := b.Enqueue(ctx, sess.ID, "alice", "urgent", true)
	if err != nil || q.Position != 1 {
		t.Fatalf("node b queues: %+v %v", q, err)
	}
	select {
	case reason := <-storeA.heard:
		if reason != fsm.InterruptReason {
			t.Fatalf("node a heard %q", reason)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("node a never heard the interrupt")
	}
	close(gate)
	if res, err := slow.Wait(); err != nil || res.Error == nil || res.Error.Code != events.CodeCanceled {
		t.Fatalf("node a's turn: %+v %v", res, err)
	}
	turns := queueRan(t, storeB, sess.ID)
	if len(turns) != 2 || turns[0].Status != projection.TurnCanceled || turns[0].ErrorMessage != fsm.InterruptReason || turns[1].ID != q.TurnID {
		t.Fatalf("turns %+v", turns)
	}
	evs, err := storeB.Events(ctx, sess.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	results := 0
	for _, ev := range evs {
		if ev.Type == events.TypeToolResulted {
			results++
			if tr, _ := events.DecodeAs[*events.ToolResulted](ev); tr.IsError {
				t.Fatalf("the running tool was stopped: %+v", tr)
			}
		}
	}
	if results != 1 {
		t.Fatalf("%d tool results, not the running tool's one", results)
	}
}

// staleRunning is node B's store, whose list of running turns was read a moment ago.
type staleRunning struct {
	*postgres.Store
	running []projection.Turn
}

func (s staleRunning) RunningTurns(context.Context) ([]projection.Turn, error) { return s.running, nil }

// TestARecoveryLeavesATurnThatEndedAlone: node B lists node A's turn as running,
// then A ends it and gives its lease up before B takes the lease: B's recovery finds
// the turn ended and leaves it — no second terminal event.
func TestARecoveryLeavesATurnThatEndedAlone(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	storeA := postgres.MustOpenOn(t, dsn)
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	a := node(t, storeA, "node-a", gate, entered)
	ctx := context.Background()
	sess, slow := slowTurn(t, a, entered)
	running, err := storeA.RunningTurns(ctx)
	if err != nil || len(running) != 1 {
		t.Fatalf("running turns: %+v %v", running, err)
	}
	close(gate)
	if res, err := slow.Wait(); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("node a's turn: %+v %v", res, err)
	}
	seq, _ := storeA.LastSeq(ctx, sess.ID)
	if err := a.Settled(ctx, sess.ID, slow.ID, seq); err != nil {
		t.Fatal(err)
	}
	b := node(t, staleRunning{postgres.MustOpenOn(t, dsn), running}, "node-b", gate, entered)
	if res, err := b.Recover(ctx); err != nil || len(res) != 0 {
		t.Fatalf("node b recovered an ended turn: %+v %v", res, err)
	}
	if after, _ := storeA.LastSeq(ctx, sess.ID); after != seq {
		evs, _ := storeA.Events(ctx, sess.ID, seq)
		t.Fatalf("node b appended to the ended turn: %+v", evs)
	}
}

// expiring is a refund whose approval nobody gives in time is rejected.
type expiring struct{ fsm.Tool }

func (x expiring) Spec() fsm.ToolSpec {
	s := x.Tool.Spec()
	s.NeedsApproval, s.ExpiresIn = true, time.Minute
	return s
}

// TestApprovalExpiryIsTakenOnce: node A's turn waits for an approval that expires;
// nodes B and C, whose clocks are past the expiry, both look for due approvals at
// once: the approval is rejected once, and the turn resumes and ends once.
func TestApprovalExpiryIsTakenOnce(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	ctx := context.Background()
	engine := func(name string, clock func() time.Time) *fsm.Engine {
		refund := expiring{functool.MustNew("refund", "refunds", func(context.Context, noArgs) (any, error) { return "refunded", nil })}
		return engineOn(t, postgres.MustOpenOn(t, dsn), name, []scripted.Rule{
			{When: scripted.When{AfterTool: "*"}, Reply: "{{output.error.message}}"},
			{Tools: []scripted.ToolCall{{Name: "refund", Arguments: `{}`}}},
		}, []fsm.Tool{refund}, fsm.Options{Clock: clock})
	}
	a := engine("node-a", time.Now)
	later := func() time.Time { return time.Now().Add(time.Hour) }
	b, c := engine("node-b", later), engine("node-c", later)
	sess, err := a.CreateSession(ctx, "demo", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	asked, err := a.RunTurn(ctx, sess.ID, "refund it")
	if err != nil || asked.Status != fsm.StatusSuspended {
		t.Fatalf("the refund: %+v %v", asked, err)
	}
	var wg sync.WaitGroup
	for _, e := range []*fsm.Engine{b, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.ExpireDue(ctx) // a node that finds it taken by the other says so, and changes nothing
		}()
	}
	wg.Wait()
	evs, err := postgres.MustOpenOn(t, dsn).Events(ctx, sess.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, ev := range evs {
		counts[ev.Type]++
	}
	if counts[events.TypeApprovalResolved] != 1 || counts[events.TypeTurnResumed] != 1 || counts[events.TypeTurnCommitted] != 1 || counts[events.TypeToolResulted] != 1 {
		t.Fatalf("the log after two nodes expired the approval: %v", counts)
	}
}

// TestAQueuedInputRunsOnce: input queued on node B behind node A's turn runs once,
// as its turn, though both nodes try to start the queue when A's turn ends (A as its
// turn ends, B as it looks for work).
func TestAQueuedInputRunsOnce(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	storeA, storeB := postgres.MustOpenOn(t, dsn), postgres.MustOpenOn(t, dsn)
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	a, b := node(t, storeA, "node-a", gate, entered), node(t, storeB, "node-b", gate, entered)
	ctx := context.Background()
	sess, slow := slowTurn(t, a, entered)
	q, err := b.Enqueue(ctx, sess.ID, "alice", "after the slow one", false)
	if err != nil {
		t.Fatal(err)
	}
	close(gate)
	done := make(chan struct{})
	go func() { // node b looks for work all the while
		defer close(done)
		for i := 0; i < 50; i++ {
			b.Recover(ctx)
		}
	}()
	slow.Wait()
	<-done
	if turns := queueRan(t, storeB, sess.ID); len(turns) != 2 || turns[1].ID != q.TurnID {
		t.Fatalf("turns %+v", turns)
	}
	evs, _ := storeB.Events(ctx, sess.ID, 0)
	started := 0
	for _, ev := range evs {
		if ev.Type == events.TypeTurnStarted && ev.Turn == q.TurnID {
			started++
		}
	}
	if started != 1 {
		t.Fatalf("the queued turn started %d times", started)
	}
}

// queueRan waits until the session's newest turn, at least its second, has
// committed — the queued input ran once the turn before it ended — and returns the
// turns.
func queueRan(t *testing.T, s storetest.Store, session string) []projection.Turn {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		turns, err := s.Turns(context.Background(), session)
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) >= 2 && turns[len(turns)-1].Status == projection.TurnCompleted {
			return turns
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued input never ran: %+v", turns)
		}
		time.Sleep(20 * time.Millisecond) // the queue starts once the turn before it ends
	}
}

// afterLastAppend is a node's store that, once, right after a run's last append (the
// one that ends its turn) commits — before the engine lets the session go —, calls
// then.
type afterLastAppend struct {
	*postgres.Store
	armed atomic.Bool
	then  func(session string)
}

func (s *afterLastAppend) AppendLeased(ctx context.Context, lease fsm.Lease, after int64, evs []events.Event, unsynced bool) ([]events.Event, int64, error) {
	out, token, err := s.Store.AppendLeased(ctx, lease, after, evs, unsynced)
	if err == nil && lease.Release && s.armed.CompareAndSwap(true, false) {
		s.then(lease.Session)
	}
	return out, token, err
}

// TestTheLastAppendLetsTheSessionGo: a turn's last append gives its node's lease up.
// Input queued on node B right after it runs on node B at once, while node A has not
// yet let the session go, and node A does not run it again.
func TestTheLastAppendLetsTheSessionGo(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	storeA := &afterLastAppend{Store: postgres.MustOpenOn(t, dsn)}
	storeB := postgres.MustOpenOn(t, dsn)
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	close(gate)
	a, b := node(t, storeA, "node-a", gate, entered), node(t, storeB, "node-b", gate, entered)
	ctx := context.Background()
	sess, err := a.CreateSession(ctx, "demo", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	var queued fsm.Queued
	ran := make(chan []projection.Turn, 1)
	storeA.then = func(session string) {
		q, err := b.Enqueue(ctx, session, "alice", "after the first", false)
		if err != nil {
			t.Error(err)
		}
		queued = q
		ran <- queueRan(t, storeB, session) // node a holds its run until node b has run it
	}
	storeA.armed.Store(true)
	first, err := a.StartTurn(ctx, sess.ID, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := first.Wait(); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("node a's turn: %+v %v", res, err)
	}
	turns := <-ran
	if len(turns) != 2 || turns[1].ID != queued.TurnID {
		t.Fatalf("turns %+v", turns)
	}
	if err := a.Settled(ctx, sess.ID, first.ID, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if err := b.Settled(ctx, sess.ID, queued.TurnID, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if turns, _ := storeB.Turns(ctx, sess.ID); len(turns) != 2 {
		t.Fatalf("the queued input ran again: %+v", turns)
	}
}

// TestALongToolKeepsItsLease: while a turn's tool runs for many lease TTLs, its node
// keeps the session's lease (its appends and its timer renew it): no other node can
// take the session or recover the turn meanwhile.
func TestALongToolKeepsItsLease(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	storeA, storeB := postgres.MustOpenOn(t, dsn), postgres.MustOpenOn(t, dsn)
	gate, entered := make(chan struct{}), make(chan struct{}, 4)
	const ttl = 300 * time.Millisecond
	a, b := nodeWithTTL(t, storeA, "node-a", gate, entered, ttl), nodeWithTTL(t, storeB, "node-b", gate, entered, ttl)
	ctx := context.Background()
	sess, slow := slowTurn(t, a, entered)
	for end := time.Now().Add(8 * ttl); time.Now().Before(end); time.Sleep(ttl / 10) {
		if _, err := storeB.AcquireLease(ctx, sess.ID, "node-c", time.Hour); !events.IsCode(err, events.CodeConflict) {
			t.Fatalf("another node took the lease of a turn whose tool runs: %v", err)
		}
		if res, err := b.Recover(ctx); err != nil || len(res) != 0 {
			t.Fatalf("node b recovered a live node's turn: %+v %v", res, err)
		}
	}
	close(gate)
	if res, err := slow.Wait(); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("the turn: %+v %v", res, err)
	}
}
