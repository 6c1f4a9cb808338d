package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

func turnsAndTheirReadModels(t *testing.T, h Harness) {
	w := newWorld(t, h)
	id := w.session("alice")
	s, err := w.s.Session(w.ctx, id)
	if err != nil || s.App != "demo" || s.Owner != "alice" || s.ActiveAgent != "main" || string(s.Metadata) != `{"from":"storetest"}` || s.TurnCount != 0 {
		t.Fatalf("new session: %+v %v", s, err)
	}
	if app, owner, err := w.s.SessionOwner(w.ctx, id); err != nil || app != "demo" || owner != "alice" {
		t.Fatalf("session owner: %s %s %v", app, owner, err)
	}
	res := w.run(id, "look it up")
	if res.Status != fsm.StatusCompleted || res.Output != "found order 42 shipped" {
		t.Fatalf("turn: %+v", res)
	}
	turn, err := w.s.Turn(w.ctx, id, res.TurnID)
	if err != nil || turn.Status != projection.TurnCompleted || turn.ModelCalls != 2 || turn.ToolCalls != 1 || turn.Input != "look it up" ||
		turn.Agent != "main" || turn.StartSeq == 0 || turn.EndSeq <= turn.StartSeq || turn.EndedAt == nil || turn.EndAgent != "main" {
		t.Fatalf("committed turn: %+v %v", turn, err)
	}
	if last, err := w.s.LastTurn(w.ctx, id); err != nil || last.ID != res.TurnID {
		t.Fatalf("last turn: %+v %v", last, err)
	}
	if at, err := w.s.TurnEndingAt(w.ctx, id, turn.EndSeq); err != nil || at.ID != res.TurnID {
		t.Fatalf("turn ending at %d: %+v %v", turn.EndSeq, at, err)
	}
	if _, err := w.s.TurnEndingAt(w.ctx, id, turn.StartSeq); !isCode(err, events.CodeNotFound) {
		t.Fatalf("a seq that ends no turn: %v", err)
	}
	items, err := w.s.History(w.ctx, id)
	if err != nil || len(items) != 4 || items[0].Content != "look it up" || items[1].Type != events.ItemFunctionCall || items[1].Name != "lookup" ||
		items[2].Type != events.ItemFunctionCallOutput || items[3].Content != "found order 42 shipped" {
		t.Fatalf("history: %+v %v", items, err)
	}
	if s, _ = w.s.Session(w.ctx, id); s.TurnCount != 1 || s.LastCommitSeq != turn.EndSeq {
		t.Fatalf("session after a turn: %+v", s)
	}
	audit, err := w.s.Audit(w.ctx, id)
	if err != nil || !slices.ContainsFunc(audit, func(a projection.AuditEntry) bool { return a.Tool == "lookup" && a.Outcome == "ok" }) {
		t.Fatalf("audit: %+v %v", audit, err)
	}

	failed := w.run(id, "nothing matches this") // no rule: the model fails
	if ft, err := w.s.Turn(w.ctx, id, failed.TurnID); err != nil || ft.Status != projection.TurnFailed || ft.ErrorCode != events.CodeModelFailed || ft.ErrorMessage == "" {
		t.Fatalf("failed turn: %+v %v", ft, err)
	}
	if turns, err := w.s.Turns(w.ctx, id); err != nil || len(turns) != 2 || turns[0].ID != res.TurnID || turns[1].ID != failed.TurnID {
		t.Fatalf("turns: %+v %v", turns, err)
	}
	if items, _ := w.s.History(w.ctx, id); len(items) != 4 {
		t.Fatalf("a failed turn added to the history: %d items", len(items))
	}

	slow, err := w.e.StartTurn(w.ctx, id, "slow one")
	if err != nil {
		t.Fatal(err)
	}
	<-w.entered
	running, err := w.s.RunningTurns(w.ctx)
	if err != nil || !slices.ContainsFunc(running, func(r projection.Turn) bool { return r.ID == slow.ID && r.Session == id }) {
		t.Fatalf("running turns: %+v %v", running, err)
	}
	close(w.gate)
	if r, err := slow.Wait(); err != nil || r.Status != fsm.StatusCompleted {
		t.Fatalf("slow turn: %+v %v", r, err)
	}
	if running, _ := w.s.RunningTurns(w.ctx); slices.ContainsFunc(running, func(r projection.Turn) bool { return r.ID == slow.ID }) {
		t.Fatal("a committed turn is still running")
	}
}

func suspendedTurnsAndInterrupts(t *testing.T, h Harness) {
	w := newWorld(t, h)
	id := w.session("alice")
	res := w.run(id, "refund it")
	if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 {
		t.Fatalf("refund: %+v", res)
	}
	if turn, _ := w.s.Turn(w.ctx, id, res.TurnID); turn.Status != projection.TurnSuspended {
		t.Fatalf("suspended turn: %+v", turn)
	}
	suspended, err := w.s.SuspendedTurns(w.ctx)
	if err != nil || !slices.ContainsFunc(suspended, func(s projection.Turn) bool { return s.ID == res.TurnID }) {
		t.Fatalf("suspended turns: %+v %v", suspended, err)
	}
	pending, err := w.s.PendingInterrupts(w.ctx, id)
	if err != nil || len(pending) != 1 || pending[0].ID != res.Interrupts[0].ID || pending[0].Tool != "refund" || pending[0].Turn != res.TurnID || pending[0].Path == "" {
		t.Fatalf("pending interrupts: %+v %v", pending, err)
	}
	waiting, err := w.s.SessionsWaiting(w.ctx, "alice", "")
	if err != nil || len(waiting) != 1 || waiting[0].ID != id {
		t.Fatalf("sessions waiting: %+v %v", waiting, err)
	}
	if others, _ := w.s.SessionsWaiting(w.ctx, "bob", ""); len(others) != 0 {
		t.Fatalf("bob waits on alice's session: %+v", others)
	}
	yes := true
	st, err := w.e.Resume(w.ctx, id, "alice", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := st.Wait(); err != nil || done.Status != fsm.StatusCompleted || done.Output != "refunded" {
		t.Fatalf("resumed: %+v %v", done, err)
	}
	if pending, _ := w.s.PendingInterrupts(w.ctx, id); len(pending) != 0 {
		t.Fatalf("answered interrupts still pending: %+v", pending)
	}
	if waiting, _ := w.s.SessionsWaiting(w.ctx, "alice", ""); len(waiting) != 0 {
		t.Fatalf("a session waits after its answer: %+v", waiting)
	}
	audit, _ := w.s.Audit(w.ctx, id)
	if !slices.ContainsFunc(audit, func(a projection.AuditEntry) bool {
		return a.Kind == "approval" && a.Tool == "refund" && a.Outcome == "approved"
	}) {
		t.Fatalf("the approval is not in the audit: %+v", audit)
	}
}

func queuedInputs(t *testing.T, h Harness) {
	w := newWorld(t, h)
	id := w.session("alice")
	slow, err := w.e.StartTurn(w.ctx, id, "slow one")
	if err != nil {
		t.Fatal(err)
	}
	<-w.entered
	q, err := w.e.Enqueue(w.ctx, id, "alice", "hello there", false)
	if err != nil || q.Position != 1 {
		t.Fatalf("enqueue: %+v %v", q, err)
	}
	waiting, err := w.s.Queued(w.ctx, id)
	if err != nil || len(waiting) != 1 || waiting[0].Turn != q.TurnID || waiting[0].Input != "hello there" || waiting[0].By != "alice" {
		t.Fatalf("queued: %+v %v", waiting, err)
	}
	if sessions, err := w.s.QueuedSessions(w.ctx); err != nil || !slices.Contains(sessions, id) {
		t.Fatalf("queued sessions: %v %v", sessions, err)
	}
	headIs(t, w, id, 1)
	close(w.gate)
	slow.Wait()
	deadline := time.Now().Add(30 * time.Second)
	wake, stop := w.s.Watch(id)
	defer stop()
	for {
		if turn, err := w.s.Turn(w.ctx, id, q.TurnID); err == nil && turn.Status == projection.TurnCompleted {
			break
		}
		select {
		case <-wake:
		case <-time.After(time.Until(deadline)):
			t.Fatal("the queued input never ran")
		}
	}
	w.settled(id)
	if waiting, _ := w.s.Queued(w.ctx, id); len(waiting) != 0 {
		t.Fatalf("a queue that ran: %+v", waiting)
	}
	headIs(t, w, id, 0)
	if _, err := w.s.Head(w.ctx, "no-such-session"); !events.IsCode(err, events.CodeNotFound) {
		t.Fatalf("the head of no session: %v", err)
	}
}

// headIs checks that session id's head reads what Session, LastSeq and Queued read
// apart, with queued inputs waiting.
func headIs(t *testing.T, w *world, id string, queued int) {
	t.Helper()
	head, err := w.s.Head(w.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sess, _ := w.s.Session(w.ctx, id)
	last, _ := w.s.LastSeq(w.ctx, id)
	if head.Session.ID != sess.ID || head.Owner != sess.Owner || head.LastCommitSeq != sess.LastCommitSeq || head.LastSeq != last || head.Queued != queued || last == 0 {
		t.Fatalf("head %+v; session %+v at seq %d with %d queued", head, sess, last, queued)
	}
}

func branchesAndTheirHistories(t *testing.T, h Harness) {
	w := newWorld(t, h)
	a := w.session("alice")
	first := w.run(a, "hello one")
	w.run(a, "hello two")
	b, err := w.e.Branch(w.ctx, a, "alice", fsm.BranchPoint{Turn: first.TurnID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	firstTurn, _ := w.s.Turn(w.ctx, a, first.TurnID)
	if b.ParentID != a || b.ParentSeq != firstTurn.EndSeq || b.ParentTurn != first.TurnID {
		t.Fatalf("branch: %+v", b)
	}
	w.run(b.ID, "hello three")
	c, err := w.e.Branch(w.ctx, b.ID, "alice", fsm.BranchPoint{Turn: first.TurnID}, nil)
	if err == nil {
		t.Fatalf("a branch at a turn of another session was taken: %+v", c)
	}
	last, _ := w.s.LastTurn(w.ctx, b.ID)
	c, err = w.e.Branch(w.ctx, b.ID, "alice", fsm.BranchPoint{Turn: last.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.run(c.ID, "hello four")
	contents := func(id string) []string {
		items, err := w.s.History(w.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.Content)
		}
		return out
	}
	for id, want := range map[string][]string{
		a:    {"hello one", "hi", "hello two", "hi"},
		b.ID: {"hello one", "hi", "hello three", "hi"},
		c.ID: {"hello one", "hi", "hello three", "hi", "hello four", "hi"},
	} {
		if got := contents(id); !slices.Equal(got, want) {
			t.Errorf("history of %s: %q, want %q", id, got, want)
		}
	}
	if bs, err := w.s.Branches(w.ctx, a); err != nil || len(bs) != 1 || bs[0].ID != b.ID {
		t.Fatalf("branches of a: %+v %v", bs, err)
	}
	if bs, _ := w.s.Branches(w.ctx, b.ID); len(bs) != 1 || bs[0].ID != c.ID {
		t.Fatalf("branches of b: %+v", bs)
	}
	if bs, _ := w.s.Branches(w.ctx, c.ID); len(bs) != 0 {
		t.Fatalf("branches of c: %+v", bs)
	}
}

func sessionPages(t *testing.T, h Harness) {
	w := newWorld(t, h)
	var mine []string
	for i := 0; i < 5; i++ {
		mine = append(mine, w.session("alice")) // ids grow: newest first is also by id
	}
	w.session("bob")
	var got []string
	var after projection.Session
	for page := 0; page < 3; page++ {
		list, err := w.s.SessionPage(w.ctx, "alice", "", after.CreatedAt, after.ID, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list {
			if s.Owner != "alice" {
				t.Fatalf("alice's page holds %+v", s)
			}
			got = append(got, s.ID)
		}
		if len(list) == 0 {
			break
		}
		after = list[len(list)-1]
	}
	slices.Reverse(mine)
	if !slices.Equal(got, mine) {
		t.Fatalf("pages: %v, want newest first %v", got, mine)
	}
	if other, _ := w.s.SessionPage(w.ctx, "alice", "other-app", time.Time{}, "", 10); len(other) != 0 {
		t.Fatalf("a page of another app: %+v", other)
	}
}

func rebuildFoldsTheSame(t *testing.T, h Harness) {
	w := newWorld(t, h)
	a := w.session("alice")
	first := w.run(a, "look it up")
	w.run(a, "nothing matches")
	b, err := w.e.Branch(w.ctx, a, "alice", fsm.BranchPoint{Turn: first.TurnID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := w.run(b.ID, "refund it"); res.Status != fsm.StatusSuspended {
		t.Fatalf("refund: %+v", res)
	}
	before, err := w.s.DumpProjections(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	n, err := w.s.Rebuild(w.ctx)
	if err != nil || n == 0 {
		t.Fatalf("rebuild: %d %v", n, err)
	}
	after, err := w.s.DumpProjections(w.ctx)
	if err != nil || after != before {
		t.Fatalf("the read models after a rebuild differ (%v):\nbefore:\n%s\nafter:\n%s", err, before, after)
	}
}

func watchHearsCommits(t *testing.T, h Harness) {
	s := h.Open(t)
	newSession(t, s, "s1", "alice")
	wake, stop := s.Watch("s1")
	defer stop()
	if _, err := s.Append(t.Context(), "s1", 1, []events.Event{started("t1", "hi")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("a watcher of the session heard nothing of its commit")
	}
}
