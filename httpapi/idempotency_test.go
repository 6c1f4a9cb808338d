package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
	"github.com/turnlog/turnlog/projection"
)

func (b testBundle) doKeyed(t *testing.T, method, path, key, body string) response {
	t.Helper()
	req, _ := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer key-alice")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var r response
	r.status, r.header = res.StatusCode, res.Header
	json.NewDecoder(res.Body).Decode(&r.body)
	raw, _ := json.Marshal(r.body)
	r.raw = string(raw)
	return r
}

func (b testBundle) turnCount(t *testing.T, session string) int {
	t.Helper()
	r := b.do(t, "GET", "/v1/sessions/"+session+"/turns", "key-alice", "")
	turns, _ := r.body["turns"].([]any)
	return len(turns)
}

// TestIdempotentWrites: the same Idempotency-Key and body give the same result and
// never act twice — a session, a turn (also while the first request still runs: the
// second waits for it), a cancel —; the key with another body or on another route is
// a 422 naming it.
func TestIdempotentWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.doKeyed(t, "POST", "/v1/sessions", "s-1", `{"app": "demo", "metadata": {"ticket": 42}}`)
	again := b.doKeyed(t, "POST", "/v1/sessions", "s-1", `{"metadata":{"ticket":42},"app":"demo"}`) // the same JSON
	if first.status != 201 || again.status != 201 || first.body["id"] != again.body["id"] {
		t.Fatalf("create twice: %d %s / %d %s", first.status, first.raw, again.status, again.raw)
	}
	if r := b.doKeyed(t, "POST", "/v1/sessions", "s-1", `{"app": "demo"}`); r.status != 422 || r.errorCode() != "idempotency_mismatch" {
		t.Fatalf("the key with another body: %d %s", r.status, r.raw)
	}
	id := first.body["id"].(string)
	if r := b.doKeyed(t, "POST", "/v1/sessions/"+id+"/compact", "s-1", `{}`); r.status != 422 || !strings.Contains(r.errorMessage(), "POST /v1/sessions") {
		t.Fatalf("the key on another route: %d %s", r.status, r.raw)
	}
	turns := "/v1/sessions/" + id + "/turns"
	one := b.doKeyed(t, "POST", turns, "t-1", `{"input": "where is order 42?"}`)
	two := b.doKeyed(t, "POST", turns, "t-1", `{"input": "where is order 42?"}`)
	if one.status != 200 || two.status != 200 || one.body["turn_id"] != two.body["turn_id"] || one.body["output"] != two.body["output"] || b.turnCount(t, id) != 1 {
		t.Fatalf("a turn twice: %s / %s, %d turns", one.raw, two.raw, b.turnCount(t, id))
	}

	// While the first request runs, the second waits for its turn.
	gate := b.newSession(t, "key-alice", "gate")
	gateTurns := "/v1/sessions/" + gate + "/turns"
	answers := make(chan response, 2)
	go func() { answers <- b.doKeyed(t, "POST", gateTurns, "g-1", `{"input": "go"}`) }()
	<-b.entered
	go func() { answers <- b.doKeyed(t, "POST", gateTurns, "g-1", `{"input": "go"}`) }()
	running := b.do(t, "GET", "/v1/sessions/"+gate, "key-alice", "")
	if running.body["status"] != "running" {
		t.Fatalf("session: %s", running.raw)
	}
	// cancel it, twice, with one key: one TurnCanceled
	last := b.do(t, "GET", gateTurns, "key-alice", "").body["turns"].([]any)
	turnID := last[0].(map[string]any)["turn_id"].(string)
	c1 := b.doKeyed(t, "POST", gateTurns+"/"+turnID+"/cancel", "c-1", `{"reason": "enough"}`)
	c2 := b.doKeyed(t, "POST", gateTurns+"/"+turnID+"/cancel", "c-1", `{"reason": "enough"}`)
	if c1.status != 200 || c2.status != 200 || c1.body["status"] != "canceled" || c2.body["status"] != "canceled" {
		t.Fatalf("cancel twice: %s / %s", c1.raw, c2.raw)
	}
	a, bb := <-answers, <-answers
	if a.body["turn_id"] != turnID || bb.body["turn_id"] != turnID || a.body["status"] != "canceled" || bb.body["status"] != "canceled" {
		t.Fatalf("two requests for one turn: %s / %s", a.raw, bb.raw)
	}
	if n := b.turnCount(t, gate); n != 1 {
		t.Fatalf("%d turns for one key", n)
	}
	select {
	case <-b.entered:
		t.Fatal("the tool ran twice")
	default:
	}
}

// readStream reads SSE events until the stream ends or stop says so.
func readStream(evs <-chan sseEvent, stop func(sseEvent) bool) []sseEvent {
	var got []sseEvent
	for ev := range evs {
		got = append(got, ev)
		if stop != nil && stop(ev) {
			break
		}
	}
	return got
}

// TestReconnectingStreamRunsTheTurnOnce: an SSE client that loses its connection
// mid-turn and sends its request again — the same body and Idempotency-Key, and the
// last event id it saw — gets the rest of the same turn, each event once; so does one
// that reconnects after the end, and one without a key that sends Last-Event-ID. The
// log holds one turn; its tool ran once.
func TestReconnectingStreamRunsTheTurnOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := b.newSession(t, "key-alice", "gate")
	path := "/v1/sessions/" + gate + "/turns"
	body := `{"input": "go", "stream": true}`
	ctx1, drop := context.WithCancel(context.Background())
	firstPart := readStream(b.stream(t, ctx1, "POST", path, body, map[string]string{"Idempotency-Key": "sse-1"}),
		func(ev sseEvent) bool { return ev.name == "tool_call" })
	drop() // the connection is lost while the tool runs
	<-b.entered
	lastSeen := firstPart[len(firstPart)-1].id
	ctx2, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rest := b.stream(t, ctx2, "POST", path, body, map[string]string{"Idempotency-Key": "sse-1", "Last-Event-ID": strconv.FormatInt(lastSeen, 10)})
	// A client without a key reconnects too, from the same point.
	noKey := b.stream(t, ctx2, "POST", path, body, map[string]string{"Last-Event-ID": strconv.FormatInt(lastSeen, 10)})
	close(b.release)
	secondPart := readStream(rest, nil)
	thirdPart := readStream(noKey, nil)
	seen := map[int64]string{}
	for _, ev := range append(append([]sseEvent{}, firstPart...), secondPart...) {
		if ev.id == 0 {
			continue // live text has no id
		}
		if prev, dup := seen[ev.id]; dup {
			t.Fatalf("event %d (%s) came twice (first as %s)", ev.id, ev.name, prev)
		}
		seen[ev.id] = ev.name
	}
	if end := secondPart[len(secondPart)-1]; end.name != "turn_committed" || secondPart[0].id <= lastSeen {
		t.Fatalf("after reconnecting: %v", names(secondPart))
	}
	if end := thirdPart[len(thirdPart)-1]; end.name != "turn_committed" || thirdPart[0].id <= lastSeen {
		t.Fatalf("reconnecting without a key: %v", names(thirdPart))
	}
	endID := secondPart[len(secondPart)-1].id
	after := readStream(b.stream(t, ctx2, "POST", path, body, map[string]string{"Idempotency-Key": "sse-1", "Last-Event-ID": strconv.FormatInt(endID, 10)}), nil)
	if len(after) != 0 {
		t.Fatalf("reconnecting after the end: %v", names(after))
	}
	if n := b.turnCount(t, gate); n != 1 {
		t.Fatalf("%d turns in the log, want 1", n)
	}
	select {
	case <-b.entered:
		t.Fatal("the tool ran twice")
	default:
	}
}

// TestBackgroundTurns: "background": true answers 202 with the turn's Location at
// once; the turn resource says running, then — ?wait= holds it — the outcome; the
// turn's /stream follows it from the log, resumable with Last-Event-ID.
func TestBackgroundTurns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := b.newSession(t, "key-alice", "gate")
	r := b.do(t, "POST", "/v1/sessions/"+gate+"/turns", "key-alice", `{"input": "go", "background": true}`)
	loc := r.header.Get("Location")
	if r.status != http.StatusAccepted || r.body["status"] != "running" || loc == "" || !strings.HasSuffix(loc, r.body["turn_id"].(string)) {
		t.Fatalf("background: %d %s %q", r.status, r.raw, loc)
	}
	<-b.entered
	if now := b.do(t, "GET", loc, "key-alice", ""); now.status != 200 || now.body["status"] != "running" {
		t.Fatalf("while it runs: %s", now.raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs := b.stream(t, ctx, "GET", loc+"/stream", "", nil)
	first := <-evs // turn_started
	done := make(chan response, 1)
	go func() { done <- b.do(t, "GET", loc+"?wait=30s", "key-alice", "") }()
	close(b.release)
	if end := <-done; end.status != 200 || end.body["status"] != "completed" || end.body["output"] != "done" {
		t.Fatalf("waited for: %s", end.raw)
	}
	rest := readStream(evs, nil)
	if first.name != "turn_started" || rest[len(rest)-1].name != "turn_committed" {
		t.Fatalf("the turn's stream: %s %v", first.name, names(rest))
	}
	resumed := readStream(b.stream(t, ctx, "GET", loc+"/stream", "", map[string]string{"Last-Event-ID": strconv.FormatInt(first.id, 10)}), nil)
	if len(resumed) != len(rest) || resumed[0].id != rest[0].id {
		t.Fatalf("resumed after %d: %v, want %v", first.id, names(resumed), names(rest))
	}
	if r := b.do(t, "GET", "/v1/sessions/"+gate+"/turns/nope", "key-alice", ""); r.status != 404 {
		t.Fatalf("an unknown turn: %d", r.status)
	}
	if r := b.do(t, "GET", loc, "key-bob", ""); r.status != 404 {
		t.Fatalf("another user's turn: %d", r.status)
	}
}

// slowKeys holds every claim a moment, so that a repeat lands between a request's
// claim and its act.
type slowKeys struct{ *sqlite.Store }

func (k slowKeys) ClaimKey(ctx context.Context, r projection.IdempotencyRecord, now time.Time) (projection.IdempotencyRecord, bool, error) {
	got, claimed, err := k.Store.ClaimKey(ctx, r, now)
	time.Sleep(30 * time.Millisecond) // widens the window between claim and act
	return got, claimed, err
}

// postKeyed posts body to url+path, with an Idempotency-Key when key is not empty.
func postKeyed(url, path, key, body string) (int, map[string]any, error) {
	req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var v map[string]any
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v, nil
}

// TestConcurrentRepeatsActOnce: requests with one key that arrive together make one
// session.
func TestConcurrentRepeatsActOnce(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	e := demoEngines(t, store)()
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: e, Reader: store, Idempotency: slowKeys{store}, Dev: true}).Handler())
	defer srv.Close()
	ids := make(chan string, 4)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, v, err := postKeyed(srv.URL, "/v1/sessions", "together", `{"app":"demo"}`)
			if err != nil {
				t.Error(err)
				return
			}
			id, _ := v["id"].(string)
			ids <- id
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 || seen[""] {
		t.Fatalf("one key made sessions %v", seen)
	}
}

// TestContinuingAResumeOrBeyondTheLog: a keyed resume repeated as a stream replays the
// resume's part of the turn; a resume without a key that sends Last-Event-ID is a
// resume; a Last-Event-ID beyond the log still ends with the turn.
func TestContinuingAResumeOrBeyondTheLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	turns := "/v1/sessions/" + id + "/turns"
	sus := b.do(t, "POST", turns, "key-alice", `{"input": "refund order 42"}`)
	interrupt := sus.body["suspend_payload"].(map[string]any)["id"].(string)
	resume := `{"resume_map": {"` + interrupt + `": {"confirmed": true}}, "stream": true}`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := readStream(b.stream(t, ctx, "POST", turns, resume, map[string]string{"Idempotency-Key": "resume-1"}), nil)
	again := readStream(b.stream(t, ctx, "POST", turns, resume, map[string]string{"Idempotency-Key": "resume-1"}), nil)
	if len(first) == 0 || strings.Join(logged(first), ",") != strings.Join(logged(again), ",") || again[len(again)-1].name != "turn_committed" {
		t.Fatalf("a resume, then its repeat:\n%v\n%v", names(first), names(again))
	}

	// A resume without a key, with a Last-Event-ID, is a resume.
	sus = b.do(t, "POST", turns, "key-alice", `{"input": "refund order 42"}`)
	interrupt = sus.body["suspend_payload"].(map[string]any)["id"].(string)
	evs := readStream(b.stream(t, ctx, "POST", turns, `{"resume_map": {"`+interrupt+`": {"confirmed": true}}, "stream": true}`,
		map[string]string{"Last-Event-ID": "3"}), nil)
	if len(evs) == 0 || evs[len(evs)-1].name != "turn_committed" {
		t.Fatalf("a resume with Last-Event-ID: %v", names(evs))
	}

	// A running turn, followed from beyond the log: the stream ends with the turn.
	gate := b.newSession(t, "key-alice", "gate")
	gateTurns := "/v1/sessions/" + gate + "/turns"
	r := b.do(t, "POST", gateTurns, "key-alice", `{"input": "go", "background": true}`)
	<-b.entered
	beyond := b.stream(t, ctx, "GET", gateTurns+"/"+r.body["turn_id"].(string)+"/stream", "", map[string]string{"Last-Event-ID": "9999"})
	close(b.release)
	if got := readStream(beyond, nil); len(got) == 0 || got[len(got)-1].name != "turn_committed" {
		t.Fatalf("followed from beyond the log: %v", names(got))
	}
}

// logged are the events of a stream that are log events (they have an id), as
// name@id: live text pieces are not.
func logged(evs []sseEvent) []string {
	var out []string
	for _, ev := range evs {
		if ev.id != 0 && ev.name != "text_delta" {
			out = append(out, ev.name+"@"+strconv.FormatInt(ev.id, 10))
		}
	}
	return out
}

// dyingKeys is the store of a process that ends right after it started a turn: it
// never records the key's target, nor gives the claim up.
type dyingKeys struct{ *sqlite.Store }

func (dyingKeys) SetKeyTarget(context.Context, string, string, time.Time, string, string, int64) error {
	return fmt.Errorf("the process ended")
}

// TestARepeatFindsTheTurnItsDeadProcessStarted: a process claims a key, starts the
// turn and ends before it records the key's turn; the request sent again to another
// process is answered with that turn — found in the log by the key's digest on its
// TurnStarted — and no second turn runs.
func TestARepeatFindsTheTurnItsDeadProcessStarted(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	newEngine := demoEngines(t, store)
	serve := func(keys httpapi.IdempotencyKeys) *httptest.Server {
		e := newEngine()
		srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: e, Reader: store, Idempotency: keys, Dev: true}).Handler())
		t.Cleanup(srv.Close)
		return srv
	}
	dying, next := serve(dyingKeys{store}), serve(store)
	post := func(srv *httptest.Server, path, key, body string) (int, map[string]any) {
		t.Helper()
		status, v, err := postKeyed(srv.URL, path, key, body)
		if err != nil {
			t.Fatal(err)
		}
		return status, v
	}
	status, created := post(next, "/v1/sessions", "", `{"app": "demo"}`)
	sess, _ := created["id"].(string)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, created)
	}
	path := "/v1/sessions/" + sess + "/turns"
	if status, _ := post(dying, path, "once", `{"input": "where is order 42?"}`); status < 500 {
		t.Fatalf("the dying process answered %d", status)
	}
	status, got := post(next, path, "once", `{"input": "where is order 42?"}`)
	if status != http.StatusOK || got["status"] != "completed" {
		t.Fatalf("the repeat: %d %v", status, got)
	}
	turns, err := store.Turns(context.Background(), sess)
	if err != nil || len(turns) != 1 || got["turn_id"] != turns[0].ID {
		t.Fatalf("turns %+v (the repeat answered %v), %v", turns, got["turn_id"], err)
	}
}

// lateReleases gives claims up a while after it is asked to.
type lateReleases struct {
	slowKeys
	delay time.Duration
}

func (k lateReleases) ReleaseKey(ctx context.Context, owner, key string, claimedAt time.Time) error {
	time.Sleep(k.delay)
	return k.slowKeys.ReleaseKey(ctx, owner, key, claimedAt)
}

// demoEngines makes engines that serve the demo app on store, their ids from one
// counter, as processes on one database are.
func demoEngines(t *testing.T, store *sqlite.Store) func() *fsm.Engine {
	t.Helper()
	apps, err := turnlogtest.LoadApps(t, "demo", demo.Config, turnlog.Options{Functions: demo.Functions()})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	return func() *fsm.Engine {
		e, err := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: func() string { return fmt.Sprintf("id%04d", n.Add(1)) }})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// twoNodes are two servers on one store, as two nodes on one database are. Claims
// are slow to make, so a repeat on the one lands between the other's claim and its
// act; the second node gives claims up lateRelease after it is asked to.
func twoNodes(t *testing.T, store *sqlite.Store, lateRelease time.Duration) []*httptest.Server {
	t.Helper()
	newEngine := demoEngines(t, store)
	var nodes []*httptest.Server
	for i := range 2 {
		e := newEngine()
		keys := lateReleases{slowKeys{store}, time.Duration(i) * lateRelease}
		srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: e, Reader: store, Idempotency: keys, ClaimHold: time.Minute, Dev: true}).Handler())
		t.Cleanup(srv.Close)
		nodes = append(nodes, srv)
	}
	return nodes
}

// createTogether sends POST /v1/sessions with key from 8 clients at once, half to
// each node, each again after a 409, and checks that one session was made and every
// client was answered with it.
func createTogether(t *testing.T, store *sqlite.Store, nodes []*httptest.Server, key, body string) {
	t.Helper()
	ids := make(chan string, 8)
	var conflicts atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; attempt < 100; attempt++ {
				status, v, err := postKeyed(nodes[i%2].URL, "/v1/sessions", key, body)
				if err != nil {
					t.Error(err)
					return
				}
				if status == http.StatusConflict {
					conflicts.Add(1)
					time.Sleep(10 * time.Millisecond) // the request that holds the claim is making it
					continue
				}
				id, _ := v["id"].(string)
				ids <- id
				return
			}
			t.Error("a repeat never got its answer")
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 || seen[""] {
		t.Fatalf("one key made sessions %v (%d conflicts)", seen, conflicts.Load())
	}
	if made, err := store.SessionPage(context.Background(), "dev", "demo", time.Time{}, "", 100); err != nil || len(made) != 1 {
		t.Fatalf("the store holds %d sessions (%v): the key acted more than once", len(made), err)
	}
}

// TestRepeatsOnAnotherNodeActOnce: requests with one key sent to two nodes at once
// make one session: a node that finds the key claimed by a request of the other, not
// yet done, answers 409 within ClaimHold instead of taking the claim for an
// abandoned one; the repeat sent again gets that session.
func TestRepeatsOnAnotherNodeActOnce(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	createTogether(t, store, twoNodes(t, store, 0), "together", `{"app":"demo"}`)
}

// TestAnAbandonedClaimIsTakenOverOnce: a key claimed by a request whose node went
// away, long ago, is sent again to two nodes at once, many times: one repeat takes
// the claim over and acts; every other answers with what it made (or is told to
// send it again), and one session is made.
func TestAnAbandonedClaimIsTakenOverOnce(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	body := `{"app":"demo"}`
	canon, _ := events.Canonicalize([]byte(body))
	sum := sha256.Sum256(canon)
	long := time.Now().Add(-time.Hour)
	stale := projection.IdempotencyRecord{Owner: "dev", Key: "left", Route: "POST /v1/sessions", BodyHash: hex.EncodeToString(sum[:]), CreatedAt: long, ExpiresAt: long.Add(24 * time.Hour)}
	if _, claimed, err := store.ClaimKey(context.Background(), stale, long); err != nil || !claimed {
		t.Fatalf("the stale claim: %v %v", claimed, err)
	}
	createTogether(t, store, twoNodes(t, store, 15*time.Millisecond), "left", body) // the second node gives the stale claim up after the first took it anew
}

// TestAKeyUsedAgainIsNotAnsweredWithItsOldTurn: a key expires and is used again, on
// the same session, for another input; the request of its second use ends with its
// process before it starts the turn. The repeat runs the new input: it is not
// answered with the turn of the key's first use.
func TestAKeyUsedAgainIsNotAnsweredWithItsOldTurn(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	e := demoEngines(t, store)()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: e, Reader: store, Idempotency: store, IdempotencyTTL: time.Minute,
		Clock: func() time.Time { return time.Unix(0, clock.Load()) }, Dev: true}).Handler())
	defer srv.Close()
	post := func(path, key, body string) map[string]any {
		t.Helper()
		_, v, err := postKeyed(srv.URL, path, key, body)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	session, _ := post("/v1/sessions", "", `{"app":"demo"}`)["id"].(string)
	path := "/v1/sessions/" + session + "/turns"
	first := post(path, "k", `{"input":"where is order 42?"}`)
	clock.Add(int64(2 * time.Minute)) // the key expires
	again := `{"input":"where is order 7?"}`
	canon, _ := events.Canonicalize([]byte(again))
	sum := sha256.Sum256(canon)
	at := time.Unix(0, clock.Load())
	left := projection.IdempotencyRecord{Owner: "dev", Key: "k", Route: "POST " + path, BodyHash: hex.EncodeToString(sum[:]), CreatedAt: at, ExpiresAt: at.Add(time.Minute)}
	if _, claimed, err := store.ClaimKey(context.Background(), left, at); err != nil || !claimed {
		t.Fatalf("the second use's claim: %v %v", claimed, err)
	}
	clock.Add(int64(time.Second))
	repeat := post(path, "k", again)
	turns, _ := store.Turns(context.Background(), session)
	if repeat["turn_id"] == first["turn_id"] || len(turns) != 2 || turns[1].Input != "where is order 7?" {
		t.Fatalf("the repeat of the key's second use answered %v (the first use's turn: %v); turns %+v", repeat["turn_id"], first["turn_id"], turns)
	}
}

// TestARepeatIsAnsweredHoweverItAsks: a repeat is answered as its first request was,
// whatever it adds to how it asks — a stream's Accept on a background request, a
// Last-Event-ID that names no event — since what it asks was checked the first time.
func TestARepeatIsAnsweredHoweverItAsks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.newSession(t, "key-alice", "demo")
	send := func(headers map[string]string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", b.srv.URL+"/v1/sessions/"+s+"/turns", strings.NewReader(`{"input": "where is order 42?", "background": true}`))
		req.Header.Set("Authorization", "Bearer key-alice")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "asks")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var v map[string]any
		json.NewDecoder(res.Body).Decode(&v)
		return res.StatusCode, v
	}
	code, first := send(nil)
	if code != http.StatusAccepted {
		t.Fatalf("the first request: %d %v", code, first)
	}
	for _, h := range []map[string]string{{"Accept": "text/event-stream"}, {"Last-Event-ID": "not-a-seq"}} {
		if code, again := send(h); code != http.StatusAccepted || again["turn_id"] != first["turn_id"] {
			t.Fatalf("the repeat with %v: %d %v, want 202 for turn %v", h, code, again, first["turn_id"])
		}
	}
	if turns, _ := b.store.Turns(context.Background(), s); len(turns) != 1 {
		t.Fatalf("the repeats made turns: %+v", turns)
	}
}
