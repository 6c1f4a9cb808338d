package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/client"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

type bundle struct {
	ctx         context.Context
	alice, root *client.Client
	conf        *conformance
	hookOK      *atomic.Bool
}

// setup serves the demo (with a webhook whose receiver fails until hookOK) through
// the conformance check, with a key for alice and an admin key.
func setup(t *testing.T) bundle {
	t.Helper()
	t.Setenv("CLIENT_TEST_HOOK_SECRET", "a-webhook-secret-for-the-client-test")
	var hookOK atomic.Bool
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !hookOK.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(receiver.Close)
	cfg := strings.Replace(string(demo.Config), "  demo:\n", "  demo:\n    webhooks:\n      ops: {url: \""+receiver.URL+"\", events: [turn.committed], secret_env: CLIENT_TEST_HOOK_SECRET, max_attempts: 1}\n", 1)
	workspaces = t.TempDir()
	cfg = strings.Replace(cfg, "apps:\n", "apps:\n"+shellApp(workspaces)+askingApp(t.TempDir()), 1)
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: filepath.Join(t.TempDir(), "turnlog.db"), ConfigData: []byte(cfg), Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	go tl.DeliverWebhooks(context.Background()) // Close ends it
	handler, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k-alice": "alice", "k-root": "root"}, AdminKeys: map[string]bool{"k-root": true}})
	t.Cleanup(stop)
	spec := httptest.NewRecorder()
	handler.ServeHTTP(spec, httptest.NewRequest("GET", "/openapi.yaml", nil))
	conf := newConformance(t, handler, spec.Body.Bytes())
	srv := httptest.NewServer(conf)
	t.Cleanup(srv.Close)
	return bundle{ctx: context.Background(), alice: client.New(srv.URL, "k-alice", nil), root: client.New(srv.URL, "k-root", nil), conf: conf, hookOK: &hookOK}
}

// workspaces is where the shell app's sessions keep their files.
var workspaces string

// shellApp is an app whose every turn appends a line to log.txt with bash, in a
// workspace of each session's own under dir.
func shellApp(dir string) string {
	return `  shell:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: logged
          - tools: [{name: bash, arguments: '{"command": "echo more >> log.txt"}'}]
    agents:
      worker: {llm: script, tools: [bash]}
    policy:
      mode: workspace-write
      workspace: ` + dir + `
      workspace_scope: session
      rules:
        - {name: shell, tools: [bash], decision: allow}
`
}

// askingApp is an app whose every turn removes a file with bash, which its policy
// asks a person about.
func askingApp(dir string) string {
	return `  asking:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: removed
          - tools: [{name: bash, arguments: '{"command": "rm -f gone.txt"}'}]
    agents:
      worker: {llm: script, tools: [bash]}
    policy:
      mode: workspace-write
      workspace: ` + dir + `
      workspace_scope: session
`
}

// until asks again, briefly, until ok holds (a state another goroutine reaches).
func until(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestEveryRoute drives every route through the client, and checks every answer
// against the schema /openapi.yaml gives it: the client covers the API, and the
// description is what the server answers.
func TestEveryRoute(t *testing.T) {
	b := setup(t)
	ctx, c := b.ctx, b.alice
	if err := c.Healthz(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Readyz(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Metrics(ctx); err != nil || !strings.Contains(string(m), "turnlog_") {
		t.Fatalf("metrics: %v", err)
	}
	if spec, err := c.OpenAPI(ctx); err != nil || !strings.HasPrefix(string(spec), "openapi: 3.1") {
		t.Fatalf("openapi: %v", err)
	}

	// The README's quickstart.
	s, err := c.CreateSession(ctx, "demo", mustJSON(`{"ticket": 42}`))
	if err != nil || s.App != "demo" || string(s.Metadata) != `{"ticket":42}` || s.Owner != "alice" {
		t.Fatalf("create: %+v %v", s, err)
	}
	res, err := c.RunTurn(ctx, s.ID, client.TurnRequest{Input: "where is order 42?"})
	if err != nil || res.Status != "completed" || !strings.Contains(res.Output, "shipped") || res.Error != nil {
		t.Fatalf("turn: %+v %v", res, err)
	}
	first := res.TurnID
	if items, err := c.History(ctx, s.ID); err != nil || len(items) != 4 || items[1].Name != "lookup_order" {
		t.Fatalf("history: %+v %v", items, err)
	}
	if evs, err := c.Events(ctx, s.ID, 2); err != nil || len(evs) == 0 || evs[0].Seq != 3 {
		t.Fatalf("events: %+v %v", evs, err)
	}
	if page, err := c.ListSessions(ctx, "demo", 10, ""); err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != s.ID {
		t.Fatalf("list: %+v %v", page, err)
	}
	if turns, err := c.Turns(ctx, s.ID); err != nil || len(turns) != 1 || turns[0].Status != "completed" {
		t.Fatalf("turns: %+v %v", turns, err)
	}
	if tr, err := c.Turn(ctx, s.ID, first, 0); err != nil || tr.Status != "completed" || tr.Output != res.Output {
		t.Fatalf("turn resource: %+v %v", tr, err)
	}

	// A streamed turn, and the same turn followed from the log.
	st, err := c.StreamTurn(ctx, s.ID, client.TurnRequest{Input: "can I get a refund for order 1001?"}, client.IdempotencyKey("stream-1"))
	if err != nil {
		t.Fatal(err)
	}
	var names, ids []string
	var streamed string
	for {
		ev, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.ID != "" {
			names, ids = append(names, ev.Name), append(ids, ev.ID)
		}
		if ev.Name == "turn_started" {
			var d struct {
				TurnID string `json:"turn_id"`
			}
			ev.Decode(&d)
			streamed = d.TurnID
		}
	}
	st.Close()
	if got := strings.Join(names, ","); !strings.HasPrefix(got, "turn_started,") || !strings.HasSuffix(got, ",turn_committed") || !strings.Contains(got, "tool_result") {
		t.Fatalf("stream: %s", got)
	}
	follow, err := c.FollowTurn(ctx, s.ID, streamed)
	if err != nil {
		t.Fatal(err)
	}
	// The log gives the answer's text as recorded; the live stream sent it in pieces.
	var again []string
	for ev, err := follow.Next(); err == nil; ev, err = follow.Next() {
		if ev.ID != "" && (ev.Name != "text_delta" || slices.Contains(ids, ev.ID)) {
			again = append(again, ev.ID)
		}
	}
	follow.Close()
	if strings.Join(again, ",") != strings.Join(ids, ",") {
		t.Fatalf("followed %v, streamed %v", again, ids)
	}

	// An approval, answered with an edit: the history shows the call as it ran.
	res, err = c.RunTurn(ctx, s.ID, client.TurnRequest{Input: "refund order 42"})
	if err != nil || res.Status != "suspended" || res.SuspendPayload == nil || res.SuspendPayload.Kind != "tool_approval" || res.SuspendPayload.Tool != "issue_refund" {
		t.Fatalf("suspend: %+v %v", res, err)
	}
	if pending, err := c.Interrupts(ctx, s.ID); err != nil || len(pending) != 1 || pending[0].ID != res.SuspendPayload.ID || pending[0].Status != "pending" {
		t.Fatalf("interrupts: %+v %v", pending, err)
	}
	if sum, err := c.Session(ctx, s.ID); err != nil || sum.Status != "waiting" {
		t.Fatalf("summary: %+v %v", sum, err)
	}
	res, err = c.RunTurn(ctx, s.ID, client.TurnRequest{ResumeMap: map[string]client.Answer{res.SuspendPayload.ID: client.Edit(mustJSON(`{"order_id": 7}`))}})
	if err != nil || res.Status != "completed" {
		t.Fatalf("edit: %+v %v", res, err)
	}
	items, _ := c.History(ctx, s.ID)
	var edited *client.Item
	for i := range items {
		if items[i].EditedBy != "" {
			edited = &items[i]
		}
	}
	if edited == nil || string(edited.Arguments) != `{"order_id":7}` || string(edited.ProposedArguments) != `{"order_id":42}` || edited.EditedBy != "alice" {
		t.Fatalf("the edited call in history: %+v", edited)
	}
	if audit, err := c.Audit(ctx, s.ID); err != nil || !hasAudit(audit, "approval", "edited") {
		t.Fatalf("audit: %+v %v", audit, err)
	}

	// A suspended turn canceled; a background turn followed to its end.
	res, _ = c.RunTurn(ctx, s.ID, client.TurnRequest{Input: "refund order 42"})
	if turn, err := c.CancelTurn(ctx, s.ID, res.TurnID, "asked twice"); err != nil || turn.Status != "canceled" {
		t.Fatalf("cancel: %+v %v", turn, err)
	}
	bg, err := c.RunTurn(ctx, s.ID, client.TurnRequest{Input: "where is order 42?", Background: true})
	if err != nil || bg.Status != "running" || bg.Location == "" {
		t.Fatalf("background: %+v %v", bg, err)
	}
	if tr, err := c.Turn(ctx, s.ID, bg.TurnID, 30*time.Second); err != nil || tr.Status != "completed" {
		t.Fatalf("waited for the background turn: %+v %v", tr, err)
	}
	if comp, err := c.Compact(ctx, s.ID); err != nil || comp.Status != "completed" {
		t.Fatalf("compact: %+v %v", comp, err)
	}

	// Branches and export.
	points, err := c.BranchPoints(ctx, s.ID)
	if err != nil || len(points.BranchPoints) == 0 || points.BranchPoints[0].TurnID != first {
		t.Fatalf("branch points: %+v %v", points, err)
	}
	br, err := c.Branch(ctx, s.ID, client.BranchRequest{AtTurn: first, Metadata: mustJSON(`{"try": 2}`)})
	if err != nil || br.ParentID != s.ID || br.ParentTurn != first {
		t.Fatalf("branch: %+v %v", br, err)
	}
	if nd, err := c.Export(ctx, s.ID); err != nil || !strings.HasPrefix(string(nd), `{"session":"`+s.ID+`","seq":1,"type":"SessionCreated"`) {
		t.Fatalf("export: %.200s %v", nd, err)
	}
	live, cancel := context.WithCancel(ctx)
	evs, err := c.FollowEvents(live, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := evs.Next(); err != nil || ev.Name != "SessionCreated" || ev.ID != "1" {
		t.Fatalf("follow events: %+v %v", ev, err)
	}
	cancel()
	evs.Close()

	// Webhook deliveries: admin only; a dead letter sent again is delivered.
	var forbidden *client.Error
	if _, err := c.Deliveries(ctx, client.DeliveryFilter{}); !errors.As(err, &forbidden) || forbidden.Status != 403 || forbidden.Code != "forbidden" {
		t.Fatalf("deliveries without the admin role: %v", err)
	}
	var dead client.DeliveryPage
	until(t, "a dead letter", func() bool {
		dead, err = b.root.Deliveries(ctx, client.DeliveryFilter{Status: "dead", Limit: 1})
		return err == nil && len(dead.Deliveries) == 1
	})
	d, err := b.root.Delivery(ctx, dead.Deliveries[0].ID)
	if err != nil || d.Status != "dead" || d.LastStatus != 503 || d.Event != "turn.committed" {
		t.Fatalf("delivery: %+v %v", d, err)
	}
	b.hookOK.Store(true)
	if d, err = b.root.Redeliver(ctx, d.ID); err != nil || d.Status != "pending" {
		t.Fatalf("redeliver: %+v %v", d, err)
	}
	until(t, "the redelivery", func() bool {
		d, err = b.root.Delivery(ctx, d.ID)
		return err == nil && d.Status == "delivered"
	})

	// Reverts: a turn's files put back, the revert undone, every turn after the first
	// undone; a file changed since is a revert_conflict naming it.
	sh, err := c.CreateSession(ctx, "shell", nil)
	if err != nil {
		t.Fatal(err)
	}
	var shellTurns []string
	for range 2 {
		r, err := c.RunTurn(ctx, sh.ID, client.TurnRequest{Input: "log it"})
		if err != nil || r.Status != "completed" {
			t.Fatalf("shell turn: %+v %v", r, err)
		}
		shellTurns = append(shellTurns, r.TurnID)
	}
	if files, err := c.TurnFiles(ctx, sh.ID, shellTurns[1]); err != nil || len(files) != 1 || files[0].Tool != "bash" ||
		len(files[0].Changes) != 1 || files[0].Changes[0].Path != "log.txt" || files[0].Changes[0].Before == nil || files[0].Changes[0].After == nil {
		t.Fatalf("the turn's files: %+v %v", files, err)
	}
	logFile := filepath.Join(workspaces, "sessions", sh.ID, "log.txt")
	logged := func() string { raw, _ := os.ReadFile(logFile); return string(raw) }
	var conflictErr *client.Error
	rev, err := c.RevertTurn(ctx, sh.ID, shellTurns[1], false)
	if err != nil || rev.Count != 1 || rev.Paths[0] != "log.txt" || logged() != "more\n" {
		t.Fatalf("revert a turn: %+v %v; log.txt %q", rev, err, logged())
	}
	if undone, err := c.UndoRevert(ctx, sh.ID, rev.ID, false); err != nil || undone.Revert != rev.ID || logged() != "more\nmore\n" {
		t.Fatalf("undo the revert: %+v %v; log.txt %q", undone, err, logged())
	}
	os.WriteFile(logFile, []byte("someone else's\n"), 0o644)
	if _, err := c.RevertSession(ctx, sh.ID, shellTurns[0], false); !errors.As(err, &conflictErr) || conflictErr.Status != 409 ||
		conflictErr.Code != "revert_conflict" || len(conflictErr.Conflicts) != 1 || conflictErr.Conflicts[0].Path != "log.txt" {
		t.Fatalf("a conflict: %v", err)
	}
	if back, err := c.RevertSession(ctx, sh.ID, shellTurns[0], true); err != nil || len(back.Turns) != 1 || back.Turns[0] != shellTurns[1] || logged() != "more\n" {
		t.Fatalf("back to the first turn: %+v %v; log.txt %q", back, err, logged())
	}

	// A yes for the rest of the session: the next turn's removal does not ask; revoked,
	// it asks again.
	ask, err := c.CreateSession(ctx, "asking", nil)
	if err != nil {
		t.Fatal(err)
	}
	asked, err := c.RunTurn(ctx, ask.ID, client.TurnRequest{Input: "tidy up"})
	if err != nil || asked.Status != "suspended" || asked.SuspendPayload == nil || asked.SuspendPayload.Rule != "default:workspace-write:L4" {
		t.Fatalf("the removal does not ask: %+v %v", asked, err)
	}
	if r, err := c.RunTurn(ctx, ask.ID, client.TurnRequest{ResumeMap: map[string]client.Answer{asked.SuspendPayload.ID: client.ApproveForSession(client.GrantPattern{})}}); err != nil || r.Status != "completed" {
		t.Fatalf("approved for the session: %+v %v", r, err)
	}
	if r, err := c.RunTurn(ctx, ask.ID, client.TurnRequest{Input: "tidy up again"}); err != nil || r.Status != "completed" {
		t.Fatalf("the grant does not hold: %+v %v", r, err)
	}
	if p, err := c.Plan(ctx, ask.ID); err != nil || p != nil {
		t.Fatalf("the plan of a session whose agents keep none: %+v %v", p, err)
	}
	sp, err := c.Spend(ctx, ask.ID)
	calls := int64(0)
	for _, f := range sp.Session {
		calls += f.Calls
	}
	if err != nil || len(sp.Budgets) != 0 || calls == 0 || len(sp.Turn) == 0 {
		t.Fatalf("the spend of a session without budgets: %+v %v", sp, err)
	}
	grants, err := c.Grants(ctx, ask.ID)
	if err != nil || len(grants) != 1 || grants[0].Command != "rm" || grants[0].By != "alice" || !grants[0].Holds {
		t.Fatalf("grants: %+v %v", grants, err)
	}
	if g, err := c.RevokeGrant(ctx, ask.ID, grants[0].ID); err != nil || g.Revoked == nil || g.Holds {
		t.Fatalf("revoke: %+v %v", g, err)
	}
	if r, err := c.RunTurn(ctx, ask.ID, client.TurnRequest{Input: "tidy up once more"}); err != nil || r.Status != "suspended" {
		t.Fatalf("revoked, the removal does not ask: %+v %v", r, err)
	}

	// Erasure: the branch needs cascade; then the session is gone; receipts are admin's.
	var conflict *client.Error
	if _, err := c.EraseSession(ctx, s.ID, false); !errors.As(err, &conflict) || conflict.Status != 409 {
		t.Fatalf("erase a session with a branch: %v", err)
	}
	rec, err := c.EraseSession(ctx, s.ID, true)
	if err != nil || rec.Kind != "session" || len(rec.Sessions) != 2 || rec.Counts.Events == 0 || rec.Scrubbed == nil {
		t.Fatalf("erase: %+v %v", rec, err)
	}
	if _, err := c.Session(ctx, s.ID); !errors.As(err, &conflict) || conflict.Status != 404 {
		t.Fatalf("the erased session: %v", err)
	}
	if rec, err = b.root.EraseUser(ctx, "nobody"); err != nil || rec.Kind != "user" || rec.Counts.Sessions != 0 {
		t.Fatalf("erase a user with nothing: %+v %v", rec, err)
	}
	if page, err := b.root.Erasures(ctx, "", 1); err != nil || len(page.Erasures) != 1 || page.Next == "" {
		t.Fatalf("receipts: %+v %v", page, err)
	} else if next, err := b.root.Erasures(ctx, page.Next, 10); err != nil || len(next.Erasures) != 1 || next.Erasures[0].Subject != "nobody" {
		t.Fatalf("receipts' next page: %+v %v", next, err)
	}
	b.conf.check(t)
}

func hasAudit(audit []client.AuditEntry, kind, outcome string) bool {
	for _, a := range audit {
		if a.Kind == kind && a.Outcome == outcome {
			return true
		}
	}
	return false
}

// TestErrorsAreTyped: an answer that is not a success is an *Error with the API's
// code and message, and it matches its documented schema too.
func TestErrorsAreTyped(t *testing.T) {
	b := setup(t)
	var e *client.Error
	if _, err := b.alice.Session(b.ctx, "nope"); !errors.As(err, &e) || e.Status != 404 || e.Code != "not_found" {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := b.alice.CreateSession(b.ctx, "nope", nil); !errors.As(err, &e) || e.Status != 400 || !strings.Contains(e.Message, "nope") {
		t.Fatalf("unknown app: %v", err)
	}
	if _, err := client.New(strings.TrimSuffix(b.alice.BaseURL(), "/"), "wrong", nil).ListSessions(b.ctx, "", 0, ""); !errors.As(err, &e) || e.Status != 401 {
		t.Fatalf("a wrong key: %v", err)
	}
	s, _ := b.alice.CreateSession(b.ctx, "demo", nil)
	b.alice.RunTurn(b.ctx, s.ID, client.TurnRequest{Input: "hello"}, client.IdempotencyKey("k1"))
	if _, err := b.alice.RunTurn(b.ctx, s.ID, client.TurnRequest{Input: "other"}, client.IdempotencyKey("k1")); !errors.As(err, &e) || e.Status != 422 || e.Code != "idempotency_mismatch" {
		t.Fatalf("a key with another body: %v", err)
	}
	b.conf.mu.Lock()
	defer b.conf.mu.Unlock()
	for _, p := range b.conf.problems {
		t.Error(p)
	}
}
