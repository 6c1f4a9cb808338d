package turnlog_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// TestServesFromPostgres: a postgres:// DB opens the PostgreSQL store; the demo's
// turns, an approval and the metrics' store gauges work on it as on SQLite.
func TestServesFromPostgres(t *testing.T) {
	schemaDSN := postgres.TestSchemaDSN(t)
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: schemaDSN, ConfigData: demo.Config, Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if _, ok := tl.Store.(*postgres.Store); !ok {
		t.Fatalf("a postgres:// DB opened a %T", tl.Store)
	}
	sess, err := tl.Engine.CreateSession(ctx, "demo", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := runTurn(t, tl, sess.ID, "where is order 42?"); res.Status != fsm.StatusCompleted || !strings.Contains(res.Output, "Order 42") {
		t.Fatalf("turn: %+v", res)
	}
	asked := runTurn(t, tl, sess.ID, "refund order 42")
	yes := true
	st, err := tl.Engine.Resume(ctx, sess.ID, "alice", map[string]fsm.Answer{asked.Interrupts[0].ID: {Confirmed: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := st.Wait(); err != nil || !strings.Contains(res.Output, "Refunded") {
		t.Fatalf("approved refund: %+v %v", res, err)
	}
	h, stop := tl.Handler(turnlog.ServeOptions{Dev: true})
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()
	m := scrape{t: t, c: &http.Client{}, url: srv.URL}
	if m.value("turnlog_store_up") != 1 || m.value("turnlog_db_bytes") <= 0 {
		t.Fatalf("store gauges: up %v, %v bytes", m.value("turnlog_store_up"), m.value("turnlog_db_bytes"))
	}
}
