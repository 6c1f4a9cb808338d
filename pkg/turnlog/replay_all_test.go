package turnlog_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// replayConfig: a shop whose support agent looks orders up (and hands nothing off),
// and a chat app whose greeter offers no tool.
const replayConfig = `apps:
  shop:
    start_agent: support
    llms:
      m:
        provider: scripted
        rules:
          - when: {after_tool: lookup_order}
            reply: "Order {{output.order_id}} is {{output.status}}."
          - when: {input: 'order (\d+)'}
            tools: [{name: lookup_order, arguments: '{"order_id": {{match.1}}}'}]
          - reply: "Hello."
    tools:
      lookup_order: {idempotent: true}
    agents:
      support: {llm: m, instructions: "Help with orders.", tools: [lookup_order]}
  chat:
    start_agent: greeter
    llms:
      m:
        provider: scripted
        rules:
          - reply: "Hi there."
    agents:
      greeter: {llm: m, instructions: "Greet."}
`

// lookupFunctions are the shop's functions, lookup_order described as description.
func lookupFunctions(description string) turnlog.Functions {
	return turnlog.Functions{"lookup_order": functool.MustNew("lookup_order", description, func(_ context.Context, a orderArgs) (any, error) {
		return map[string]any{"order_id": a.OrderID, "status": "shipped"}, nil
	})}
}

// recordSessions runs n sessions on db (a third of them the chat's, one in ten of
// the shop's branched after its first turn) and returns the shop sessions with a
// model call.
func recordSessions(t *testing.T, db string, n int) map[string]bool { return recordSessionsB(t, db, n) }

func recordSessionsB(t testing.TB, db string, n int) map[string]bool {
	t.Helper()
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: db, ConfigData: []byte(replayConfig), Functions: lookupFunctions("Looks an order up."), Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	shop := map[string]bool{}
	run := func(session, input string) {
		t.Helper()
		res, err := tl.Engine.RunTurn(ctx, session, input)
		if err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("%s: %+v %v", input, res, err)
		}
	}
	for i := range n {
		app := "shop"
		if i%3 == 2 {
			app = "chat"
		}
		s, err := tl.Engine.CreateSession(ctx, app, fmt.Sprintf("user%d", i%7), nil)
		if err != nil {
			t.Fatal(err)
		}
		run(s.ID, fmt.Sprintf("where is order %d?", i))
		if app == "chat" {
			continue
		}
		shop[s.ID] = true
		if i%10 == 0 {
			first, err := tl.Store.LastTurn(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			run(s.ID, "thanks")
			b, err := tl.Engine.Branch(ctx, s.ID, fmt.Sprintf("user%d", i%7), fsm.BranchPoint{Turn: first.ID}, nil)
			if err != nil {
				t.Fatal(err)
			}
			run(b.ID, "hello again")
			shop[b.ID] = true
			if i%50 == 0 { // and a branch of the branch
				bt, err := tl.Store.LastTurn(ctx, b.ID)
				if err != nil {
					t.Fatal(err)
				}
				bb, err := tl.Engine.Branch(ctx, b.ID, fmt.Sprintf("user%d", i%7), fsm.BranchPoint{Turn: bt.ID}, nil)
				if err != nil {
					t.Fatal(err)
				}
				run(bb.ID, "order 9 please")
				shop[bb.ID] = true
			}
		}
	}
	return shop
}

// TestReplayAllNamesWhatAConfigChanges: the sessions of a log replayed against the
// config they ran under diverge nowhere; against one whose lookup_order is described
// otherwise, exactly the sessions with a model call of an agent that offered it
// diverge (a branch's too), all under that tool, with one example; the log is not
// written.
func TestReplayAllNamesWhatAConfigChanges(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "recorded.db")
	shop := recordSessions(t, db, 1000)
	runningTurn(t, db) // a turn that has not ended replays to where it last stood
	before := fileHash(t, db)
	ctx := context.Background()
	opts := turnlog.Options{DB: db, ConfigData: []byte(replayConfig), Functions: lookupFunctions("Looks an order up.")}
	rep, err := turnlog.ReplayAll(ctx, opts, turnlog.ReplaySelection{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Sessions != 1001+len(shop)-667 || rep.Diverged != 0 || len(rep.Causes) != 0 {
		t.Fatalf("against the same config: %d sessions, %d diverge: %+v", rep.Sessions, rep.Diverged, rep.Causes)
	}
	opts.Functions = lookupFunctions("Looks an order up by its number or its tracking code.")
	rep, err = turnlog.ReplayAll(ctx, opts, turnlog.ReplaySelection{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Diverged != len(shop) || len(rep.Causes) != 1 || rep.Causes[0].Sessions != len(shop) ||
		rep.Causes[0].Cause != "agent support: tool lookup_order changed (at support/model/*)" {
		t.Fatalf("against a changed tool: %d of %d diverge (want the %d shop sessions): %+v", rep.Diverged, rep.Sessions, len(shop), rep.Causes)
	}
	ex := rep.Causes[0].Example
	if !shop[ex.Session] || ex.Path != "support/model/1" || !strings.Contains(ex.Message, "tools.lookup_order differs") {
		t.Fatalf("the example: %+v", ex)
	}
	if fileHash(t, db) != before {
		t.Fatal("the replay wrote to the log")
	}
	// A selection: the chat app alone diverges nowhere; a sample of 10 shop sessions
	// brings the sessions they were branched from.
	if rep, err := turnlog.ReplayAll(ctx, opts, turnlog.ReplaySelection{App: "chat"}); err != nil || rep.Sessions != 333 || rep.Diverged != 0 {
		t.Fatalf("the chat app: %+v %v", rep, err)
	}
	if rep, err := turnlog.ReplayAll(ctx, opts, turnlog.ReplaySelection{App: "shop", Sample: 10}); err != nil || rep.Sessions < 10 || rep.Diverged != rep.Sessions {
		t.Fatalf("a sample of the shop: %+v %v", rep, err)
	}
}

// TestReplayAllReadsPostgres: a log on PostgreSQL replays the same way, read in
// read-only transactions.
func TestReplayAllReadsPostgres(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	shop := recordSessions(t, dsn, 30)
	opts := turnlog.Options{DB: dsn, ConfigData: []byte(replayConfig), Functions: lookupFunctions("Looks an order up, faster.")}
	rep, err := turnlog.ReplayAll(context.Background(), opts, turnlog.ReplaySelection{})
	if err != nil || rep.Diverged != len(shop) || len(rep.Causes) != 1 || !strings.Contains(rep.Causes[0].Cause, "tool lookup_order changed") {
		t.Fatalf("%+v %v", rep, err)
	}
}

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(raw)
}

// runningTurn adds a session whose turn is running: its start and first model call
// are in the log, its end not yet.
func runningTurn(t *testing.T, db string) {
	t.Helper()
	ctx := context.Background()
	gate := make(chan struct{})
	entered := make(chan struct{})
	fns := lookupFunctions("Looks an order up.")
	slow := functool.MustNew("lookup_order", "Looks an order up.", func(ctx context.Context, a orderArgs) (any, error) {
		close(entered)
		<-gate
		return map[string]any{"order_id": a.OrderID, "status": "shipped"}, nil
	})
	fns["lookup_order"] = slow
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: db, ConfigData: []byte(replayConfig), Functions: fns, Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tl.Engine.CreateSession(ctx, "shop", "user0", nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := tl.Engine.StartTurn(ctx, s.ID, "where is order 1?")
	if err != nil {
		t.Fatal(err)
	}
	<-entered // the model call is recorded, the tool runs
	if last, _ := tl.Store.LastTurn(ctx, s.ID); last.Status != "running" {
		t.Fatalf("the turn is %s", last.Status)
	}
	snapshot := db + ".running"
	copyFile(t, db, snapshot)
	close(gate)
	st.Wait()
	tl.Close()
	copyFile(t, snapshot, db) // the log as it was while the turn ran
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		raw, err := os.ReadFile(from + suffix)
		if os.IsNotExist(err) {
			os.Remove(to + suffix)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+suffix, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
