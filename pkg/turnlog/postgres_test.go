package turnlog_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

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

// TestPostgresRoundTripsPerTurnAreNamed: what a REST turn of the demo with two tool
// calls costs the database, round trip by round trip (each statement the pool runs
// or prepares), without an Idempotency-Key and with one, on a warm store. The figures
// are held: a change that adds round trips to a turn fails here, naming them.
func TestPostgresRoundTripsPerTurnAreNamed(t *testing.T) {
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: postgres.TestSchemaDSN(t), ConfigData: demo.Config, Functions: demo.Functions(), LeaseTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	store := tl.Store.(*postgres.Store)
	h, stop := tl.Handler(turnlog.ServeOptions{Dev: true})
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(path, body, key string) string {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 {
			t.Fatalf("%s: %d %s", path, res.StatusCode, raw)
		}
		return string(raw)
	}
	session := regexp.MustCompile(`"id":"([^"]+)"`).FindStringSubmatch(post("/v1/sessions", `{"app": "demo"}`, ""))[1]
	const input = `{"input": "can I get a refund for order 1001?"}`
	// A turn's last round trip is its session's queue, looked at once the turn has let
	// the session go — after its answer: waited for, so it falls in its own turn.
	settled := func(r *postgres.RoundTripRecording) []string {
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := r.SQL()
			if len(got) > 0 && strings.Contains(got[len(got)-1], "FROM proj_queue") {
				return r.Stop()
			}
			if time.Now().After(deadline) {
				t.Fatalf("the turn never looked at its queue: %v", got)
			}
			time.Sleep(time.Millisecond)
		}
	}
	warm := store.RecordRoundTrips()
	post("/v1/sessions/"+session+"/turns", input, "warm") // every statement prepared once
	settled(warm)
	for _, c := range []struct {
		key     string
		ceiling int // the statements a turn runs today (docs/deploy.md)
	}{{"", 10}, {"turn-key", 15}} {
		record := store.RecordRoundTrips()
		out := post("/v1/sessions/"+session+"/turns", input, c.key)
		trips := settled(record)
		if !strings.Contains(out, `"status":"completed"`) || !strings.Contains(out, "Refundable") {
			t.Fatalf("the turn: %s", out)
		}
		// A statement is prepared once per pooled connection: which connections a turn
		// gets varies, so the held figure is the statements run, the prepares beside it.
		ran := 0
		for i, sql := range trips {
			if !strings.HasPrefix(sql, "prepare: ") {
				ran++
			}
			t.Logf("  %2d %.110s", i+1, sql)
		}
		t.Logf("a two-tool REST turn (key %q): %d statements run, %d round trips with the prepares", c.key, ran, len(trips))
		if ran > c.ceiling {
			t.Errorf("a two-tool REST turn (key %q) ran %d statements, more than %d", c.key, ran, c.ceiling)
		}
	}
}
