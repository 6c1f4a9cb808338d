package systemtest

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
)

// shopConfig is the app the multi-node tests run: "pay REF" calls a tool that is not
// idempotent, "check REF" one that is; "refund REF" calls one that needs a person's
// approval first. Both are
// HTTP tools on a server of the test, which counts each REF it is sent.
const shopConfig = `
apps:
  shop:
    start_agent: clerk
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: "done"
          - when: {input: '^pay (\S+)'}
            tools: [{name: pay, arguments: '{"ref": "{{match.1}}"}'}]
          - when: {input: '^check (\S+)'}
            tools: [{name: check, arguments: '{"ref": "{{match.1}}"}'}]
          - when: {input: '^refund (\S+)'}
            tools: [{name: refund, arguments: '{"ref": "{{match.1}}"}'}]
          - reply: "hello"
    tools:
      pay: {url: "%[1]s/pay", description: takes a payment, timeout: 30s,
            parameters: {type: object, properties: {ref: {type: string}}, required: [ref]}}
      check: {url: "%[1]s/check", description: looks a payment up, timeout: 30s, idempotent: true,
              parameters: {type: object, properties: {ref: {type: string}}, required: [ref]}}
      refund: {url: "%[1]s/refund", description: refunds a payment, timeout: 30s, needs_approval: true,
               parameters: {type: object, properties: {ref: {type: string}}, required: [ref]}}
    agents:
      clerk: {llm: script, tools: [pay, check, refund]}
`

// shopServer is the tools' server: it counts the REFs it is sent, and holds each
// request for the time hold gives it (hold learns how many times the REF came, this
// time included). Its answer says which time this was.
type shopServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]int
}

func newShopServer(t testing.TB, hold func(ref string, nth int) time.Duration) *shopServer {
	s := &shopServer{seen: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args struct{ Ref string }
		json.NewDecoder(r.Body).Decode(&args)
		s.mu.Lock()
		s.seen[args.Ref]++
		nth := s.seen[args.Ref]
		s.mu.Unlock()
		time.Sleep(hold(args.Ref, nth))
		fmt.Fprintf(w, `{"ok": true, "ref": %q, "nth": %d}`, args.Ref, nth)
	}))
	t.Cleanup(s.Close)
	return s
}

// sent is how many requests the server was sent.
func (s *shopServer) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.seen {
		n += c
	}
	return n
}

// twice are the REFs the server was sent more than once.
func (s *shopServer) twice() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for ref, n := range s.seen {
		if n > 1 {
			out[ref] = n
		}
	}
	return out
}

// shopCluster writes the config and the keys and makes a cluster of nodes on a
// schema of its own.
func shopCluster(t *testing.T, tools string, lease time.Duration) (*cluster, string) {
	dir := t.TempDir()
	cfg, keys := filepath.Join(dir, "agent.yaml"), filepath.Join(dir, "keys")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(shopConfig, tools)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keys, []byte("key-alice=alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dsn := postgres.TestSchemaDSN(t)
	return newCluster(t, dir, dsn, "--config", cfg, "--api-keys-file", keys, "--lease-ttl", lease.String()), dsn
}

// TestThreeNodesSurviveKills: three real nodes on one database; 20 sessions take
// turns through all of them — payments (not idempotent) and refunds (approved by a
// person, on whichever node) — while every couple of seconds a node chosen by a
// seeded generator is SIGKILLed and started again, for a fixed number of rounds.
// Clients send each request again, with its Idempotency-Key, to another node when
// theirs goes away. Afterwards the database holds no seq gap, no tool result twice,
// no turn with two terminal events, no turn neither ended nor waiting, and every
// approval answered exactly once; the tools' server was sent no payment twice.
func TestThreeNodesSurviveKills(t *testing.T) {
	t.Parallel()
	const (
		sessions = 20
		rounds   = 8
		every    = 2 * time.Second
		lease    = 2 * time.Second
		budget   = 3 * time.Minute // the whole campaign, builds aside
	)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TURNLOG_CAMPAIGN_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (TURNLOG_CAMPAIGN_SEED=%d kills the same nodes in the same order; where in a turn each kill lands is the machine's timing)", seed, seed)
	shop := newShopServer(t, func(string, int) time.Duration {
		return 60 * time.Millisecond // a tool takes a while, so kills land inside turns
	})
	c, dsn := shopCluster(t, shop.URL, lease)
	turnlogBinary(t)
	began := time.Now()
	for slot := range 3 {
		c.start(slot)
	}
	client := &http.Client{Timeout: 90 * time.Second}
	picker := rand.New(rand.NewPCG(seed, 1))
	var pickMu sync.Mutex
	pick := func() string {
		pickMu.Lock()
		defer pickMu.Unlock()
		for {
			if urls := c.urls(); len(urls) > 0 {
				return urls[picker.IntN(len(urls))]
			}
			time.Sleep(20 * time.Millisecond) // every node is restarting
		}
	}
	// until sends call to one node after another until one answers it (not 5xx, not
	// a 409 for a busy session or a key in progress elsewhere).
	until := func(call apiCall) (int, map[string]any) {
		var last map[string]any
		for deadline := time.Now().Add(budget); time.Now().Before(deadline); {
			status, body := call.send(client, pick())
			if status != 0 && status < 500 && status != http.StatusConflict {
				return status, body
			}
			if status != 0 {
				last = map[string]any{"last_status": status, "last_answer": body}
			}
			time.Sleep(50 * time.Millisecond) // its node went away, or is busy: another one
		}
		return 0, last
	}
	ids := make([]string, sessions)
	for i := range ids {
		status, body := until(apiCall{"POST", "/v1/sessions", fmt.Sprintf("create-%d", i), map[string]any{"app": "shop"}})
		if status != http.StatusCreated {
			t.Fatalf("create session %d: %d %v\n%s", i, status, body, c.logs())
		}
		ids[i] = body["id"].(string)
	}

	var stop atomic.Bool
	var turns, approvals, failed atomic.Int64
	errs := make(chan string, sessions)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				ref := fmt.Sprintf("s%02d-%03d", i, n)
				input := "pay " + ref
				if n%4 == 3 {
					input = "refund " + ref
				}
				path := "/v1/sessions/" + id + "/turns"
				status, body := until(apiCall{"POST", path, "turn-" + ref, map[string]any{"input": input}})
				for status == http.StatusOK && body["status"] == "suspended" {
					interrupts, _ := body["interrupts"].([]any)
					answers := map[string]any{}
					for _, in := range interrupts {
						answers[in.(map[string]any)["id"].(string)] = map[string]any{"confirmed": true}
					}
					approvals.Add(1)
					status, body = until(apiCall{"POST", path, "answer-" + ref, map[string]any{"resume_map": answers}})
				}
				if status != http.StatusOK {
					errs <- fmt.Sprintf("session %s turn %s: %d %v", id, ref, status, body)
					return
				}
				turns.Add(1)
				if body["status"] == "failed" {
					failed.Add(1)
				}
			}
		}()
	}
	killer := rand.New(rand.NewPCG(seed, 2))
	for round := range rounds {
		time.Sleep(every)
		slot := killer.IntN(3)
		c.kill(slot)
		t.Logf("round %d: killed node %d", round+1, slot)
		c.start(slot)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("%s", e)
	}
	if t.Failed() {
		t.Fatalf("seed %d\n%s", seed, c.logs())
	}

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	// A turn whose node was killed after its client gave up on it is recovered by
	// another node once its lease expires: wait for that.
	for deadline := time.Now().Add(4 * lease * 3); ; {
		var running int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM proj_turns WHERE status = 'running'`).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("seed %d: %d turns still run, nobody recovered them\n%s", seed, running, c.logs())
		}
		time.Sleep(100 * time.Millisecond) // leases expire, then a node's next look recovers them
	}
	if took := time.Since(began); took > budget {
		t.Errorf("the campaign took %s, over its budget of %s", took, budget)
	}
	violations := map[string]string{
		"a seq gap": `SELECT session_id || ': ' || count(*) || ' events, last seq ' || max(seq) FROM events GROUP BY session_id HAVING count(*) <> max(seq)`,
		"a tool result twice": `SELECT session_id || ' ' || turn_id || ' ' || path FROM events WHERE type = 'ToolResulted'
			GROUP BY session_id, turn_id, path HAVING count(*) > 1`,
		"two terminal events": `SELECT session_id || ' ' || turn_id || ': ' || string_agg(type || '@' || seq || CASE WHEN type = 'TurnFailed' THEN data::text ELSE '' END, ' ' ORDER BY seq) FROM events
			WHERE type IN ('TurnCommitted', 'TurnFailed', 'TurnCanceled') GROUP BY session_id, turn_id HAVING count(*) > 1`,
		"a turn neither ended nor waiting": `SELECT session_id || ' ' || turn_id || ' ' || status FROM proj_turns
			WHERE status NOT IN ('completed', 'failed', 'canceled', 'suspended')`,
		"an approval not answered exactly once": `SELECT r.session_id || ' ' || (r.data->>'interrupt_id') || ': ' || count(a.id) || ' answers'
			FROM events r LEFT JOIN events a ON a.session_id = r.session_id AND a.type = 'ApprovalResolved' AND a.data->>'interrupt_id' = r.data->>'interrupt_id'
			WHERE r.type = 'ApprovalRequested' GROUP BY r.session_id, r.data->>'interrupt_id' HAVING count(a.id) <> 1`,
	}
	for what, q := range violations {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for rows.Next() {
			var s string
			rows.Scan(&s)
			t.Errorf("%s: %s", what, s)
		}
		if err := rows.Err(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		rows.Close()
	}
	for ref, n := range shop.twice() {
		var turns string
		db.QueryRowContext(ctx, `SELECT string_agg(turn_id || ' ' || status || ' ' || coalesce(error_code, ''), '; ') FROM proj_turns WHERE input LIKE '% ' || $1`, ref).Scan(&turns)
		t.Errorf("the tools' server was sent %s %d times; its turns: %s", ref, n, turns)
	}
	var events, recovered int
	db.QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&events)
	db.QueryRowContext(ctx, `SELECT count(*) FROM proj_turns WHERE error_code = 'tool_outcome_unknown'`).Scan(&recovered)
	t.Logf("%d turns (%d failed, %d of them tool_outcome_unknown after a kill), %d approvals, %d events, in %s",
		turns.Load(), failed.Load(), recovered, approvals.Load(), events, time.Since(began).Round(time.Second))
	if turns.Load() < sessions {
		t.Errorf("only %d turns ended", turns.Load())
	}
	var paid int
	db.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE type = 'ToolResulted' AND NOT coalesce((data->>'is_error')::boolean, false)`).Scan(&paid)
	if shop.sent() == 0 || paid == 0 {
		t.Errorf("no tool ran: %d sent to the tools' server, %d results", shop.sent(), paid)
	}
	if t.Failed() {
		t.Logf("seed %d\n%s", seed, strings.TrimSpace(c.logs()))
	}
}
