package turnlog_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// fakeClock is a clock a model call moves on.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// slowModel takes 1.5 s of the clock, and reports cached and reasoning tokens.
type slowModel struct {
	fsm.Model
	clock *fakeClock
}

func (m slowModel) Call(ctx context.Context, req fsm.ModelRequest) (fsm.ModelResponse, error) {
	m.clock.advance(1500 * time.Millisecond)
	resp, err := m.Model.Call(ctx, req)
	resp.Usage.CachedTokens, resp.Usage.ReasoningTokens = 3, 2
	return resp, err
}

// TestTurnsCarryTheWholeUsage: a turn's cached input and reasoning output tokens and
// the time its model calls took reach the turns read model (and its SQL view) from
// ModelCalled, and a rebuild counts the same from the events.
func TestTurnsCarryTheWholeUsage(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := filepath.Join(t.TempDir(), "t.db")
		checkTheWholeUsage(t, db, "sqlite", "file:"+db+"?mode=ro", "?")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn := postgres.TestSchemaDSN(t)
		checkTheWholeUsage(t, dsn, "pgx", dsn, "$1")
	})
}

func checkTheWholeUsage(t *testing.T, db, driver, dsn, param string) {
	ctx := context.Background()
	clock := &fakeClock{now: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)}
	fns, _, _ := refundAndSlow()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: db, ConfigData: []byte(opsConfig), Functions: fns, Clock: clock.Now, IgnoreWebhooks: true,
		WrapModel: func(_ string, m fsm.Model) fsm.Model { return slowModel{m, clock} }})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	s, _ := tl.Engine.CreateSession(ctx, "ops", "alice", nil)
	runTurn(t, tl, s.ID, "hello")
	check := func(when string) {
		turns, err := tl.Store.Turns(ctx, s.ID)
		if err != nil || len(turns) != 1 {
			t.Fatalf("%s: turns %+v %v", when, turns, err)
		}
		tr := turns[0]
		if tr.ModelCalls != 1 || tr.Usage.CachedTokens != 3 || tr.Usage.ReasoningTokens != 2 || tr.ModelMS != 1500 {
			t.Fatalf("%s: the turn's usage: %d model calls, %+v, %d ms", when, tr.ModelCalls, tr.Usage, tr.ModelMS)
		}
	}
	check("as recorded")
	if _, err := tl.Store.(interface {
		Rebuild(context.Context) (int64, error)
	}).Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	check("rebuilt")
	conn, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var cached, reasoning, ms int64
	if err := conn.QueryRow(`SELECT cached_tokens, reasoning_tokens, model_ms FROM turns WHERE session_id = `+param, s.ID).Scan(&cached, &reasoning, &ms); err != nil ||
		cached != 3 || reasoning != 2 || ms != 1500 {
		t.Fatalf("the turns view: %d %d %d %v", cached, reasoning, ms, err)
	}
}
