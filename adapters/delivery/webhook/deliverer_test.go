package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/delivery/webhook"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/tools/httptool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// receiver records what it is sent and answers with status (200 unless set).
type receiver struct {
	mu     sync.Mutex
	status int
	got    []received
}

type received struct {
	header http.Header
	body   string
	target string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, received{req.Header.Clone(), string(body), req.URL.RequestURI()})
	status := r.status
	r.mu.Unlock()
	if status == 0 {
		status = 200
	}
	w.WriteHeader(status)
	io.WriteString(w, "answer of the receiver")
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received{}, r.got...)
}

type bundle struct {
	ctx   context.Context
	store *sqlite.Store
	clock *clock
	rcv   *receiver
	url   string
}

func setup(t *testing.T) bundle {
	t.Helper()
	c := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF", Clock: c.Now})
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	return bundle{ctx: context.Background(), store: store, clock: c, rcv: rcv, url: srv.URL + "/hooks/turnlog?src=1"}
}

func (b bundle) deliverer(t *testing.T, hooks ...webhook.Hook) *webhook.Deliverer {
	t.Helper()
	d, err := webhook.New(b.store, webhook.Options{Hooks: hooks, Clock: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	b.store.RouteWebhooks(d.Route)
	return d
}

// turn appends a session of app with one turn that ends with end.
func (b bundle) turn(t *testing.T, session, app string, end events.Payload) {
	t.Helper()
	evs := []events.Event{
		events.MustNew("", "", &events.SessionCreated{App: app, Owner: "alice", Agent: "support"}),
		events.MustNew("t1", "", &events.TurnStarted{Input: "hi", Agent: "support"}),
		events.MustNew("t1", "", end),
	}
	if _, err := b.store.Append(b.ctx, session, 0, evs); err != nil {
		t.Fatal(err)
	}
}

func (b bundle) deliveries(t *testing.T) []projection.Delivery {
	t.Helper()
	list, err := b.store.Deliveries(b.ctx, projection.DeliveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestDeliversEachEventOnceSigned: a committed turn is posted once to the webhook
// that asked for it, signed like an HTTP tool's request with the delivery id as the
// key; its body is the documented payload; a second round sends nothing.
func TestDeliversEachEventOnceSigned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	secret := []byte("a webhook secret")
	d := b.deliverer(t, webhook.Hook{App: "demo", Name: "crm", URL: b.url, Events: []string{projection.WebhookTurnCommitted}, Secrets: [][]byte{secret}})
	b.turn(t, "s1", "demo", &events.TurnCommitted{Agent: "support", Output: "done", Usage: events.Usage{InputTokens: 3}})
	if n, err := d.DeliverDue(b.ctx); n != 1 || err != nil {
		t.Fatalf("DeliverDue = %d, %v", n, err)
	}
	got := b.rcv.received()
	if len(got) != 1 {
		t.Fatalf("received %d requests", len(got))
	}
	r := got[0]
	id := projection.DeliveryID("demo", "crm", "s1", 3)
	if r.header.Get("Idempotency-Key") != id || r.header.Get("Turnlog-Delivery") != id || r.header.Get("Turnlog-Event") != "turn.committed" || r.header.Get("Turnlog-Attempt") != "1" {
		t.Fatalf("headers: %v", r.header)
	}
	if err := httptool.Verify([][]byte{secret}, r.header, "POST", r.target, []byte(r.body), b.clock.Now(), time.Minute); err != nil {
		t.Fatalf("the signature does not verify: %v", err)
	}
	if err := httptool.Verify([][]byte{[]byte("another")}, r.header, "POST", r.target, []byte(r.body), b.clock.Now(), time.Minute); err == nil {
		t.Fatal("a wrong secret verifies")
	}
	want := `{"app":"demo","created_at":"2026-12-01T12:00:00Z","data":{"agent":"support","output":"done","status":"completed","usage":{"input_tokens":3,"output_tokens":0}},"event":"turn.committed","id":"` + id + `","seq":3,"session_id":"s1","turn_id":"t1"}`
	if r.body != want {
		t.Fatalf("body\n%s\nwant\n%s", r.body, want)
	}
	if n, _ := d.DeliverDue(b.ctx); n != 0 || len(b.rcv.received()) != 1 {
		t.Fatalf("a second round sent %d", n)
	}
	list := b.deliveries(t)
	if len(list) != 1 || list[0].Status != projection.DeliveryDelivered || list[0].Attempts != 1 || list[0].LastStatus != 200 || list[0].DeliveredAt == nil || list[0].NextAt != nil {
		t.Fatalf("deliveries: %+v", list)
	}
}

// TestOnlyWhatWasAskedFor: each webhook hears only its app's sessions and the kinds
// it named; every kind has its payload.
func TestOnlyWhatWasAskedFor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	d := b.deliverer(t,
		webhook.Hook{App: "demo", Name: "ops", URL: b.url, Events: []string{projection.WebhookTurnFailed, projection.WebhookTurnSuspended, projection.WebhookTurnCanceled}},
		webhook.Hook{App: "other", Name: "all", URL: b.url, Events: projection.WebhookEvents})
	b.turn(t, "s1", "demo", &events.TurnCommitted{Agent: "support", Output: "done"})
	b.turn(t, "s2", "demo", &events.TurnFailed{ErrorCode: events.CodeMaxTurns, Message: "too many", Path: "support/model/9"})
	b.turn(t, "s3", "demo", &events.TurnSuspended{Interrupts: []string{"int_1"}})
	b.turn(t, "s4", "demo", &events.TurnCanceled{Reason: "asked by alice"})
	b.turn(t, "s5", "nohooks", &events.TurnCommitted{Agent: "support", Output: "done"})
	if n, err := d.DeliverDue(b.ctx); n != 3 || err != nil {
		t.Fatalf("DeliverDue = %d, %v", n, err)
	}
	bodies := map[string]string{}
	for _, r := range b.rcv.received() {
		var p struct {
			Session string          `json:"session_id"`
			Data    json.RawMessage `json:"data"`
		}
		json.Unmarshal([]byte(r.body), &p)
		bodies[p.Session] = string(p.Data)
	}
	for session, want := range map[string]string{
		"s2": `{"error":{"code":"max_turns_exceeded","message":"too many","path":"support/model/9"},"status":"failed"`,
		"s3": `{"interrupts":["int_1"],"status":"suspended"`,
		"s4": `{"reason":"asked by alice","status":"canceled"`,
	} {
		if !strings.HasPrefix(bodies[session], want) {
			t.Errorf("%s: data %s, want it to start %s", session, bodies[session], want)
		}
	}
	if len(bodies) != 3 {
		t.Fatalf("delivered for %v", bodies)
	}
}

// TestBackoffThenDeadLetterThenRedeliver: a receiver that fails is tried again after
// 1s, 2s, 4s (capped at 5s), then the delivery is dead; sent again by hand, it is
// delivered with the same id.
func TestBackoffThenDeadLetterThenRedeliver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.rcv.status = 503
	d := b.deliverer(t, webhook.Hook{App: "demo", Name: "crm", URL: b.url, Events: projection.WebhookEvents,
		Backoff: time.Second, MaxBackoff: 5 * time.Second, MaxAttempts: 5})
	b.turn(t, "s1", "demo", &events.TurnCommitted{Agent: "support", Output: "done"})
	start := b.clock.Now()
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second} {
		if n, err := d.DeliverDue(b.ctx); n != 1 || err != nil {
			t.Fatalf("attempt %d: DeliverDue = %d, %v", i+1, n, err)
		}
		dl := b.deliveries(t)[0]
		if dl.Status != projection.DeliveryPending || dl.Attempts != i+1 || !dl.NextAt.Equal(b.clock.Now().Add(wait)) ||
			dl.LastStatus != 503 || !strings.Contains(dl.LastError, "503 answer of the receiver") {
			t.Fatalf("after attempt %d: %+v (want due in %s)", i+1, dl, wait)
		}
		b.clock.Add(wait - time.Millisecond)
		if n, _ := d.DeliverDue(b.ctx); n != 0 {
			t.Fatalf("attempt %d: tried again before its time", i+1)
		}
		b.clock.Add(time.Millisecond)
	}
	if n, _ := d.DeliverDue(b.ctx); n != 1 {
		t.Fatal("the last attempt was not made")
	}
	dead := b.deliveries(t)[0]
	if dead.Status != projection.DeliveryDead || dead.Attempts != 5 || dead.NextAt != nil {
		t.Fatalf("after the last attempt: %+v", dead)
	}
	if b.clock.Now().Sub(start) != 12*time.Second {
		t.Fatalf("the attempts took %s", b.clock.Now().Sub(start))
	}
	b.clock.Add(time.Hour)
	if n, _ := d.DeliverDue(b.ctx); n != 0 {
		t.Fatal("a dead letter was sent again by itself")
	}
	if _, err := b.store.Redeliver(b.ctx, "whd_nope", b.clock.Now()); !events.IsCode(err, events.CodeNotFound) {
		t.Fatalf("redeliver an unknown id: %v", err)
	}
	b.rcv.mu.Lock()
	b.rcv.status = 200
	b.rcv.mu.Unlock()
	again, err := b.store.Redeliver(b.ctx, dead.ID, b.clock.Now())
	if err != nil || again.Status != projection.DeliveryPending || again.Attempts != 0 {
		t.Fatalf("redeliver: %+v %v", again, err)
	}
	if _, err := b.store.Redeliver(b.ctx, dead.ID, b.clock.Now()); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("redeliver what is not dead: %v", err)
	}
	if n, _ := d.DeliverDue(b.ctx); n != 1 {
		t.Fatal("the redelivery was not made")
	}
	got := b.rcv.received()
	if len(got) != 6 || got[5].header.Get("Turnlog-Delivery") != dead.ID || got[5].body != got[0].body {
		t.Fatalf("received %d; the redelivery must carry the same id and body", len(got))
	}
	if dl := b.deliveries(t)[0]; dl.Status != projection.DeliveryDelivered {
		t.Fatalf("after the redelivery: %+v", dl)
	}
}

// TestHeldAttemptIsNotTakenTwice: a claimed delivery is not claimed again while its
// attempt may still run; released at start, it is due at once.
func TestHeldAttemptIsNotTakenTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deliverer(t, webhook.Hook{App: "demo", Name: "crm", URL: b.url, Events: projection.WebhookEvents, Timeout: time.Second})
	b.turn(t, "s1", "demo", &events.TurnCommitted{Agent: "support", Output: "done"})
	first, err := b.store.ClaimDeliveries(b.ctx, b.clock.Now(), 6*time.Second, 10)
	if err != nil || len(first) != 1 || first[0].Attempts != 1 {
		t.Fatalf("claim: %+v %v", first, err)
	}
	if again, _ := b.store.ClaimDeliveries(b.ctx, b.clock.Now().Add(5*time.Second), 6*time.Second, 10); len(again) != 0 {
		t.Fatalf("claimed twice: %+v", again)
	}
	if err := b.store.ReleaseDeliveries(b.ctx, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	again, _ := b.store.ClaimDeliveries(b.ctx, b.clock.Now(), 6*time.Second, 10)
	if len(again) != 1 || again[0].ID != first[0].ID || again[0].Attempts != 2 {
		t.Fatalf("after release: %+v", again)
	}
}

// TestRedirectIsAFailure: a receiver that redirects is not followed.
func TestRedirectIsAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.rcv.status = http.StatusTemporaryRedirect
	d := b.deliverer(t, webhook.Hook{App: "demo", Name: "crm", URL: b.url, Events: projection.WebhookEvents})
	b.turn(t, "s1", "demo", &events.TurnCommitted{Agent: "support", Output: "done"})
	d.DeliverDue(b.ctx)
	if dl := b.deliveries(t)[0]; dl.Status != projection.DeliveryPending || dl.LastStatus != 307 || len(b.rcv.received()) != 1 {
		t.Fatalf("after a redirect: %+v", dl)
	}
}

// TestOnlyTheHolderRecords: an attempt whose hold ran out (another took the
// delivery) cannot overwrite the outcome of the attempt that holds it.
func TestOnlyTheHolderRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deliverer(t, webhook.Hook{App: "demo", Name: "crm", URL: b.url, Events: projection.WebhookEvents})
	b.turn(t, "s1", "demo", &events.TurnCommitted{Agent: "support", Output: "done"})
	first, _ := b.store.ClaimDeliveries(b.ctx, b.clock.Now(), time.Minute, 10)
	b.clock.Add(2 * time.Minute) // the first attempt's hold runs out
	second, _ := b.store.ClaimDeliveries(b.ctx, b.clock.Now(), time.Minute, 10)
	if len(first) != 1 || len(second) != 1 || second[0].Attempts != 2 {
		t.Fatalf("claims: %+v %+v", first, second)
	}
	now := b.clock.Now()
	if err := b.store.RecordDelivery(b.ctx, second[0].ID, 2, projection.DeliveryOutcome{Status: projection.DeliveryDelivered, At: now, HTTPStatus: 200}); err != nil {
		t.Fatal(err)
	}
	if err := b.store.RecordDelivery(b.ctx, first[0].ID, 1, projection.DeliveryOutcome{Status: projection.DeliveryDead, At: now, Error: "late"}); err != nil {
		t.Fatal(err)
	}
	if dl := b.deliveries(t)[0]; dl.Status != projection.DeliveryDelivered || dl.LastError != "" {
		t.Fatalf("a late attempt overwrote the outcome: %+v", dl)
	}
}

// goneEvent is an outbox whose deliveries' events cannot be read.
type goneEvent struct {
	webhook.Outbox
	recorded []projection.DeliveryOutcome
}

func (g *goneEvent) DeliveryEvent(context.Context, projection.Delivery) (events.Event, error) {
	return events.Event{}, &events.Error{Code: events.CodeCorruptLog, Message: "the event s1/3 is missing"}
}

func (g *goneEvent) RecordDelivery(_ context.Context, _ string, _ int, o projection.DeliveryOutcome) error {
	g.recorded = append(g.recorded, o)
	return nil
}

// TestDeliveryWithoutItsEventIsDead: a delivery whose event cannot be read is
// dead-lettered with the reason, not tried again forever.
func TestDeliveryWithoutItsEventIsDead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deliverer(t, webhook.Hook{App: "demo", Name: "crm", URL: b.url, Events: projection.WebhookEvents})
	b.turn(t, "s1", "demo", &events.TurnCommitted{Agent: "support", Output: "done"})
	g := &goneEvent{Outbox: b.store}
	d, err := webhook.New(g, webhook.Options{Hooks: []webhook.Hook{{App: "demo", Name: "crm", URL: b.url, Events: projection.WebhookEvents}}, Clock: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d.DeliverDue(b.ctx); n != 1 || err != nil {
		t.Fatalf("DeliverDue = %d, %v", n, err)
	}
	if len(g.recorded) != 1 || g.recorded[0].Status != projection.DeliveryDead || !strings.Contains(g.recorded[0].Error, "missing") || len(b.rcv.received()) != 0 {
		t.Fatalf("recorded %+v", g.recorded)
	}
}
