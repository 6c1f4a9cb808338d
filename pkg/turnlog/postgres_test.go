package turnlog_test

import (
	"context"
	"io"
	"math"
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
	// A turn is over once the engine has let its session go: what it does after its
	// answer (giving a lease up, looking at the queue) counts in it.
	turn := func(key string) string {
		out := post("/v1/sessions/"+session+"/turns", input, key)
		id := regexp.MustCompile(`"turn_id":"([^"]+)"`).FindStringSubmatch(out)
		if id == nil || !strings.Contains(out, `"status":"completed"`) || !strings.Contains(out, "Refundable") {
			t.Fatalf("the turn: %s", out)
		}
		if err := tl.Engine.Settled(ctx, session, id[1], math.MaxInt64); err != nil {
			t.Fatal(err)
		}
		return out
	}
	turn("warm") // every statement prepared once
	cases := []struct {
		key     string
		ceiling int // the statements a turn runs (docs/deploy.md)
	}{{"", 6}, {"turn-key", 8}}
	record := store.RecordRoundTrips()
	var marks []int
	for _, c := range cases {
		marks = append(marks, len(record.SQL()))
		turn(c.key)
	}
	// Then one read of one statement: anything a turn did late shows before it.
	marks = append(marks, len(record.SQL()))
	if _, err := store.LastSeq(ctx, session); err != nil {
		t.Fatal(err)
	}
	trips := record.Stop()
	marks = append(marks, len(trips))
	// A statement is prepared once per pooled connection: which connections a turn
	// gets varies, so the held figure is the statements run, the prepares beside it.
	ran := func(window []string) int {
		n := 0
		for _, sql := range window {
			if !strings.HasPrefix(sql, "prepare: ") {
				n++
			}
		}
		return n
	}
	for i, c := range cases {
		window := trips[marks[i]:marks[i+1]]
		for j, sql := range window {
			t.Logf("  %2d %.110s", j+1, sql)
		}
		n := ran(window)
		t.Logf("a two-tool REST turn (key %q): %d statements run, %d round trips with the prepares", c.key, n, len(window))
		if n > c.ceiling {
			t.Errorf("a two-tool REST turn (key %q) ran %d statements, more than %d", c.key, n, c.ceiling)
		}
	}
	if last := trips[marks[len(cases)]:]; ran(last) != 1 || !strings.Contains(last[len(last)-1], "max(seq)") {
		t.Errorf("after the turns, reading a session's last seq ran %q: a turn ran statements after it was over", last)
	}
}
