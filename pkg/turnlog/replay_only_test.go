package turnlog_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

type orderArgs struct {
	OrderID int `json:"order_id"`
}

// TestReplayOnlyNeverActs: a forged recording — the approvals answered, but no
// result of the tools they let run — replayed with ReplayOnly diverges where the
// results are missing and runs neither the Go function nor the HTTP tool; an honest
// recording replays whole.
func TestReplayOnlyNeverActs(t *testing.T) {
	t.Parallel()
	var refunds, posts atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		posts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"notified": true}`))
	}))
	defer receiver.Close()
	cfg := `apps:
  shop:
    start_agent: main
    llms:
      m:
        provider: scripted
        rules:
          - {when: {after_tool: "*"}, reply: "done"}
          - tools: [{name: issue_refund, arguments: '{"order_id": 42}'}, {name: notify, arguments: '{"order_id": 42}'}]
    tools:
      issue_refund: {needs_approval: true}
      notify: {url: "` + receiver.URL + `/notify", description: tell the customer, needs_approval: true, parameters: {type: object, properties: {order_id: {type: integer}}}}
    agents:
      main: {llm: m, tools: [issue_refund, notify]}
`
	fns := turnlog.Functions{"issue_refund": functool.MustNew("issue_refund", "refunds an order", func(context.Context, orderArgs) (any, error) {
		refunds.Add(1)
		return map[string]any{"refunded": true}, nil
	})}
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "turnlog.db"), ConfigData: []byte(cfg), Functions: fns})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	s, _ := tl.Engine.CreateSession(ctx, "shop", "alice", nil)
	st, _ := tl.Engine.StartTurn(ctx, s.ID, "refund order 42 and tell them")
	res, err := st.Wait()
	if err != nil || res.Status != fsm.StatusSuspended || len(res.Interrupts) != 2 {
		t.Fatalf("suspend: %+v %v", res, err)
	}
	yes := true
	answers := map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: &yes}, res.Interrupts[1].ID: {Confirmed: &yes}}
	st, _ = tl.Engine.Resume(ctx, s.ID, "alice", answers)
	if res, err = st.Wait(); err != nil || res.Status != fsm.StatusCompleted || refunds.Load() != 1 || posts.Load() != 1 {
		t.Fatalf("the recording: %+v %v, %d refunds, %d posts", res, err, refunds.Load(), posts.Load())
	}
	recorded, _ := tl.Store.Events(ctx, s.ID, 0)

	// Honest: it replays whole and acts on nothing.
	rep, err := tl.ReplayOnly(ctx, recorded)
	if err != nil || rep.Events != len(recorded) {
		t.Fatalf("the honest recording: %+v %v", rep, err)
	}
	// Forged: the approvals and nothing after them.
	var forged []events.Event
	for _, ev := range recorded {
		forged = append(forged, ev)
		if ev.Type == events.TypeTurnResumed {
			break
		}
	}
	if _, err := tl.ReplayOnly(ctx, forged); !events.IsCode(err, events.CodeNondeterminism) || !strings.Contains(err.Error(), "no result of tool issue_refund") {
		t.Fatalf("the forged recording: %v, want a divergence at the refund", err)
	}
	if refunds.Load() != 1 || posts.Load() != 1 {
		t.Fatalf("a replay acted: %d refunds, %d posts (want 1 and 1, the recording's own)", refunds.Load(), posts.Load())
	}
}

// TestReplayOnlyRunsNoCommand: a forged recording of an approved `bash` command with
// no result recorded diverges and runs nothing: the file the command deletes is still
// there after the replay (the recording itself deleted it once).
func TestReplayOnlyRunsNoCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	victim := filepath.Join(ws, "build")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `apps:
  coder:
    start_agent: main
    llms:
      m:
        provider: scripted
        rules:
          - {when: {after_tool: bash}, reply: "cleaned"}
          - tools: [{name: bash, arguments: '{"command": "rm -rf build"}'}]
    agents:
      main: {llm: m, tools: [bash]}
    policy: {mode: workspace-write, workspace: ` + ws + `, workspace_scope: shared}
`
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(dir, "turnlog.db"), ConfigData: []byte(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	s, _ := tl.Engine.CreateSession(ctx, "coder", "alice", nil)
	st, _ := tl.Engine.StartTurn(ctx, s.ID, "clean up")
	res, err := st.Wait()
	if err != nil || res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 {
		t.Fatalf("suspend: %+v %v", res, err)
	}
	yes := true
	st, _ = tl.Engine.Resume(ctx, s.ID, "alice", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: &yes}})
	if res, err = st.Wait(); err != nil || res.Status != fsm.StatusCompleted {
		t.Fatalf("the recording: %+v %v", res, err)
	}
	if _, err := os.Stat(victim); !os.IsNotExist(err) {
		t.Fatalf("the approved command did not run in the recording: %v", err)
	}
	recorded, _ := tl.Store.Events(ctx, s.ID, 0)
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	var forged []events.Event
	for _, ev := range recorded {
		forged = append(forged, ev)
		if ev.Type == events.TypeTurnResumed {
			break
		}
	}
	if _, err := tl.ReplayOnly(ctx, forged); !events.IsCode(err, events.CodeNondeterminism) || !strings.Contains(err.Error(), "no result of tool bash") {
		t.Fatalf("the forged recording: %v, want a divergence at the command", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Fatalf("a replay ran the command: %v", err)
	}
}
