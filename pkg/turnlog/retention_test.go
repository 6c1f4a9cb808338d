package turnlog_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
	"github.com/turnlog/turnlog/projection"
)

const retentionConfig = `apps:
  brief:
    retention: 1h
    start_agent: main
    llms:
      m:
        provider: scripted
        rules:
          - {when: {input: '^refund'}, tools: [{name: refund, arguments: '{}'}]}
          - {when: {input: '.'}, reply: "ok"}
    tools:
      refund: {function: refund, needs_approval: true}
    agents:
      main: {llm: m, tools: [refund]}
  forever:
    start_agent: main
    llms:
      m: {provider: scripted, rules: [{when: {input: '.'}, reply: "ok"}]}
    agents:
      main: {llm: m}
`

// linesOf hands on each log line holding match.
type linesOf struct {
	match string
	lines chan string
}

func (l *linesOf) Write(p []byte) (int, error) {
	if strings.Contains(string(p), l.match) {
		l.lines <- string(p)
	}
	return len(p), nil
}

type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// TestRetentionErasesIdleSessions: the serving loop erases an app's sessions idle
// past its retention (a suspended turn's too), keeps a session whose branch is still
// in use until the branch is idle as well, and never touches an app without one.
func TestRetentionErasesIdleSessions(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := &manualClock{now: t0}
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(t.TempDir(), "t.db"), ConfigData: []byte(retentionConfig),
		Functions: turnlog.Functions{"refund": functions()["ping"]}, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	run := func(session, input string) *fsm.Result { t.Helper(); return runTurn(t, tl, session, input) }
	session := func(app string) projection.Session {
		t.Helper()
		s, err := tl.Engine.CreateSession(ctx, app, "alice", nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old, parent, kept := session("brief"), session("brief"), session("forever")
	if res := run(old.ID, "refund"); res.Status != "suspended" {
		t.Fatalf("refund: %+v", res)
	}
	first := run(parent.ID, "hello")
	run(kept.ID, "hello")
	child, err := tl.Engine.Branch(ctx, parent.ID, "alice", fsm.BranchPoint{Turn: first.TurnID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(40 * time.Minute))
	run(child.ID, "hello")
	clock.Set(t0.Add(80 * time.Minute))
	active := session("brief")
	run(active.ID, "hello")
	clock.Set(t0.Add(90 * time.Minute))

	receipts, err := tl.Engine.EraseIdle(ctx)
	if err != nil || len(receipts) != 1 || receipts[0].Kind != "retention" || receipts[0].By != "turnlog" || receipts[0].Subject != old.ID ||
		receipts[0].Counts.SuspendedTurns != 1 {
		t.Fatalf("first sweep: %+v %v", receipts, err)
	}
	for _, s := range []projection.Session{parent, child, active, kept} {
		if _, err := tl.Store.Session(ctx, s.ID); err != nil {
			t.Fatalf("session %s went in the first sweep: %v", s.ID, err)
		}
	}

	clock.Set(t0.Add(110 * time.Minute))
	got, err := tl.Engine.EraseIdle(ctx)
	if err != nil || len(got) != 1 || got[0].Subject != parent.ID || len(got[0].Sessions) != 2 {
		t.Fatalf("second sweep: %+v %v", got, err)
	}
	clock.Set(t0.Add(100 * 24 * time.Hour))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logged := &linesOf{match: "erased by retention", lines: make(chan string, 4)}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- tl.Serve(sctx, ln, turnlog.ServeOptions{Keys: map[string]string{"k": "alice"}, RetentionSweep: time.Hour,
			Logger: zerolog.New(logged)})
	}()
	select { // Serve sweeps once as it starts
	case <-logged.lines:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve erased nothing")
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if receipts, err = tl.Store.Erasures(ctx, "", 10); err != nil || len(receipts) != 3 || receipts[2].Subject != active.ID {
		t.Fatalf("receipts after the serving loop's sweep: %+v %v", receipts, err)
	}
	if _, err := tl.Store.Session(ctx, kept.ID); err != nil {
		t.Fatalf("the app without retention lost its session: %v", err)
	}
}

// TestRetentionIsChecked: retention is a positive duration, named where it is not.
func TestRetentionIsChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	apps, err := turnlogtest.LoadApps(t, filepath.Join(dir, "agent.yaml"), []byte(retentionConfig), turnlog.Options{Functions: turnlog.Functions{"refund": functions()["ping"]}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apps {
		if want := map[string]time.Duration{"brief": time.Hour}[a.Name]; a.Retention != want {
			t.Errorf("app %s: retention %v, want %v", a.Name, a.Retention, want)
		}
	}
	for _, bad := range []string{"soon", "-1h", "0s"} {
		src := strings.Replace(retentionConfig, "retention: 1h", "retention: "+bad, 1)
		_, err := turnlogtest.LoadApps(t, filepath.Join(dir, "agent.yaml"), []byte(src), turnlog.Options{Functions: turnlog.Functions{"refund": functions()["ping"]}})
		if err == nil || !strings.Contains(err.Error(), "apps.brief.retention: must be a positive duration") {
			t.Errorf("retention: %s: %v", bad, err)
		}
	}
}
