package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

func routeAll(w *world) {
	w.s.RouteWebhooks(func(app, event string) []string { return []string{"hook"} })
}

func webhookOutbox(t *testing.T, h Harness) {
	w := newWorld(t, h)
	routeAll(w)
	id := w.session("alice")
	res := w.run(id, "hello there")
	list, err := w.s.Deliveries(w.ctx, projection.DeliveryFilter{})
	if err != nil || len(list) != 1 || list[0].Event != projection.WebhookTurnCommitted || list[0].Session != id || list[0].Turn != res.TurnID ||
		list[0].Status != projection.DeliveryPending || list[0].Webhook != "hook" || list[0].App != "demo" {
		t.Fatalf("deliveries: %+v %v", list, err)
	}
	d := list[0]
	if _, ok, err := w.s.NextDelivery(w.ctx); err != nil || !ok {
		t.Fatalf("next delivery: %v %v", ok, err)
	}
	if ev, err := w.s.DeliveryEvent(w.ctx, d); err != nil || ev.Type != events.TypeTurnCommitted || ev.Seq != d.Seq {
		t.Fatalf("the delivery's event: %+v %v", ev, err)
	}
	now := time.Now().Add(time.Second)
	claimed, err := w.s.ClaimDeliveries(w.ctx, now, time.Minute, 10)
	if err != nil || len(claimed) != 1 || claimed[0].ID != d.ID || claimed[0].Attempts != 1 || claimed[0].Status != projection.DeliverySending {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	if again, _ := w.s.ClaimDeliveries(w.ctx, now, time.Minute, 10); len(again) != 0 {
		t.Fatalf("a held delivery was claimed again: %+v", again)
	}
	if again, _ := w.s.ClaimDeliveries(w.ctx, now.Add(2*time.Minute), time.Minute, 10); len(again) != 1 || again[0].Attempts != 2 {
		t.Fatalf("a delivery whose hold ran out: %+v", again)
	}
	// Attempt 1 lost its hold: its outcome changes nothing; attempt 2's counts.
	if err := w.s.RecordDelivery(w.ctx, d.ID, 1, projection.DeliveryOutcome{Status: projection.DeliveryDelivered, At: now}); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.s.Delivery(w.ctx, d.ID); got.Status != projection.DeliverySending {
		t.Fatalf("a stale attempt's outcome counted: %+v", got)
	}
	if err := w.s.RecordDelivery(w.ctx, d.ID, 2, projection.DeliveryOutcome{Status: projection.DeliveryDead, At: now, HTTPStatus: 503, Error: "unavailable"}); err != nil {
		t.Fatal(err)
	}
	if got, err := w.s.Delivery(w.ctx, d.ID); err != nil || got.Status != projection.DeliveryDead || got.LastStatus != 503 || got.LastError != "unavailable" {
		t.Fatalf("a dead letter: %+v %v", got, err)
	}
	if dead, _ := w.s.Deliveries(w.ctx, projection.DeliveryFilter{Status: projection.DeliveryDead}); len(dead) != 1 {
		t.Fatalf("dead letters: %+v", dead)
	}
	again, err := w.s.Redeliver(w.ctx, d.ID, now)
	if err != nil || again.Status != projection.DeliveryPending || again.Attempts != 0 {
		t.Fatalf("redeliver: %+v %v", again, err)
	}
	if _, err := w.s.Redeliver(w.ctx, d.ID, now); !isCode(err, events.CodeConflict) {
		t.Fatalf("redeliver one that is not dead: %v", err)
	}
	if _, err := w.s.Delivery(w.ctx, "nope"); !isCode(err, events.CodeNotFound) {
		t.Fatalf("no such delivery: %v", err)
	}
	claimed, _ = w.s.ClaimDeliveries(w.ctx, now, time.Minute, 10)
	if len(claimed) != 1 {
		t.Fatalf("the redelivered letter is not due: %+v", claimed)
	}
	if err := w.s.RecordDelivery(w.ctx, d.ID, claimed[0].Attempts, projection.DeliveryOutcome{Status: projection.DeliveryDelivered, At: now}); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.s.Delivery(w.ctx, d.ID); got.Status != projection.DeliveryDelivered || got.DeliveredAt == nil {
		t.Fatalf("delivered: %+v", got)
	}
	if _, ok, _ := w.s.NextDelivery(w.ctx); ok {
		t.Fatal("a delivery is due after all were delivered")
	}
}

// eachDeliveryClaimedOnce: claims made at once, as by several nodes, share the due
// deliveries: each is taken by exactly one.
func eachDeliveryClaimedOnce(t *testing.T, h Harness) {
	w := newWorld(t, h)
	routeAll(w)
	const n = 12
	for i := 0; i < n; i++ {
		w.run(w.session(fmt.Sprintf("u%d", i)), "hello")
	}
	now := time.Now().Add(time.Second)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := w.s.ClaimDeliveries(w.ctx, now, time.Hour, 2)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d deliveries claimed, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("delivery %s was claimed %d times", id, k)
		}
	}
}

// deliveriesGoInOrderPerSession: of one session's deliveries to one webhook only the
// earliest not yet delivered or dead is claimed — even by claims made at once, as by
// several nodes —, a failed attempt's backoff holds the later ones back (and
// NextDelivery says when the line goes on, not when a held-back one was due), a
// dead letter lets them go on, and a dead letter sent again by hand goes outside
// the order. Another session's line is not held up.
func deliveriesGoInOrderPerSession(t *testing.T, h Harness) {
	w := newWorld(t, h)
	routeAll(w)
	a, b := w.session("alice"), w.session("bob")
	for i := 0; i < 3; i++ {
		w.run(a, fmt.Sprintf("hello %d", i))
	}
	w.run(b, "hello")
	now := time.Now().Add(time.Second)
	claimAll := func(at time.Time) []projection.Delivery {
		t.Helper()
		var mu sync.Mutex
		var all []projection.Delivery
		var wg sync.WaitGroup
		for c := 0; c < 4; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := w.s.ClaimDeliveries(w.ctx, at, 48*time.Hour, 10)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				all = append(all, got...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return all
	}
	first := claimAll(now)
	var head projection.Delivery
	for _, d := range first {
		if d.Session == a {
			if head.ID != "" {
				t.Fatalf("two deliveries of one session claimed at once: %+v", first)
			}
			head = d
		}
	}
	if len(first) != 2 || head.ID == "" {
		t.Fatalf("claimed %+v, want the first of each session", first)
	}
	all, _ := w.s.Deliveries(w.ctx, projection.DeliveryFilter{Session: a})
	for _, d := range all {
		if d.Seq < head.Seq {
			t.Fatalf("claimed seq %d before seq %d", head.Seq, d.Seq)
		}
	}
	// The head fails; its backoff holds the line.
	backoff := now.Add(time.Hour)
	if err := w.s.RecordDelivery(w.ctx, head.ID, head.Attempts, projection.DeliveryOutcome{Status: projection.DeliveryPending, At: now, NextAt: backoff, HTTPStatus: 500}); err != nil {
		t.Fatal(err)
	}
	if got := claimAll(now.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("claimed while the line's head waits out its backoff: %+v", got)
	}
	if next, ok, err := w.s.NextDelivery(w.ctx); err != nil || !ok || next.UnixMilli() != backoff.UnixMilli() {
		t.Fatalf("next delivery %v %v %v, want the head's retry at %v", next, ok, err, backoff)
	}
	// It dies: the line goes on with the next seq.
	retry := claimAll(backoff)
	if len(retry) != 1 || retry[0].ID != head.ID {
		t.Fatalf("the retry: %+v", retry)
	}
	if err := w.s.RecordDelivery(w.ctx, head.ID, retry[0].Attempts, projection.DeliveryOutcome{Status: projection.DeliveryDead, At: backoff}); err != nil {
		t.Fatal(err)
	}
	second := claimAll(backoff)
	if len(second) != 1 || second[0].Session != a || second[0].Seq <= head.Seq {
		t.Fatalf("after the dead letter: %+v", second)
	}
	// Sent again by hand, the dead letter goes at once, beside the held second.
	if _, err := w.s.Redeliver(w.ctx, head.ID, backoff); err != nil {
		t.Fatal(err)
	}
	manual := claimAll(backoff)
	if len(manual) != 1 || manual[0].ID != head.ID {
		t.Fatalf("the redelivered letter: %+v", manual)
	}
}
