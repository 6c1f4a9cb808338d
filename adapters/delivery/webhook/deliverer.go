package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Defaults of a webhook's settings.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultBackoff     = time.Second
	DefaultMaxBackoff  = 10 * time.Minute
	DefaultMaxAttempts = 12
)

// Hook is one webhook of an app.
type Hook struct {
	App, Name string
	URL       string
	Events    []string // projection.Webhook* kinds
	// Secrets sign each request: the one in use and, while it is rotated, the next.
	Secrets     [][]byte
	Timeout     time.Duration // one attempt
	Backoff     time.Duration // the wait after the first failed attempt; it doubles after each
	MaxBackoff  time.Duration // the longest wait
	MaxAttempts int           // then the delivery is dead-lettered
}

func (h Hook) withDefaults() Hook {
	if h.Timeout <= 0 {
		h.Timeout = DefaultTimeout
	}
	if h.Backoff <= 0 {
		h.Backoff = DefaultBackoff
	}
	if h.MaxBackoff <= 0 {
		h.MaxBackoff = DefaultMaxBackoff
	}
	if h.MaxAttempts <= 0 {
		h.MaxAttempts = DefaultMaxAttempts
	}
	return h
}

// wait is how long after its attempts'th failed attempt a delivery is tried again:
// Backoff, doubled after each further failure, never more than MaxBackoff.
func (h Hook) wait(attempts int) time.Duration {
	d := h.Backoff
	for i := 1; i < attempts && d < h.MaxBackoff; i++ {
		if d > h.MaxBackoff/2 {
			return h.MaxBackoff
		}
		d *= 2
	}
	return min(d, h.MaxBackoff)
}

// Outbox is the store's side of delivery.
type Outbox interface {
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]projection.Delivery, error)
	RecordDelivery(ctx context.Context, id string, attempt int, o projection.DeliveryOutcome) error
	ReleaseDeliveries(ctx context.Context, now time.Time) error
	NextDelivery(ctx context.Context) (time.Time, bool, error)
	DeliveryEvent(ctx context.Context, d projection.Delivery) (events.Event, error)
}

// Options configure a Deliverer.
type Options struct {
	Hooks []Hook
	// Client sends the requests (default: one that never follows a redirect).
	Client *http.Client
	Clock  events.Clock
	// Poll is the longest it waits between looks at the outbox when nothing wakes it
	// (default 1s).
	Poll time.Duration
	// OnError hears what went wrong with the outbox itself (not with a receiver).
	OnError func(error)
}

// Deliverer sends the outbox's deliveries.
type Deliverer struct {
	outbox Outbox
	opts   Options
	hooks  map[[2]string]Hook
	routes map[[2]string][]string // (app, event) → webhook names
	lease  time.Duration
	wake   chan struct{}
}

// New checks the hooks and returns their deliverer.
func New(outbox Outbox, opts Options) (*Deliverer, error) {
	d := &Deliverer{outbox: outbox, opts: opts, hooks: map[[2]string]Hook{}, routes: map[[2]string][]string{}, wake: make(chan struct{}, 1)}
	if d.opts.Clock == nil {
		d.opts.Clock = time.Now
	}
	if d.opts.Poll <= 0 {
		d.opts.Poll = time.Second
	}
	if d.opts.Client == nil {
		d.opts.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	for _, h := range opts.Hooks {
		h = h.withDefaults()
		key := [2]string{h.App, h.Name}
		if _, dup := d.hooks[key]; dup {
			return nil, fmt.Errorf("app %s: two webhooks named %s", h.App, h.Name)
		}
		d.hooks[key] = h
		for _, ev := range h.Events {
			d.routes[[2]string{h.App, ev}] = append(d.routes[[2]string{h.App, ev}], h.Name)
		}
		// A held attempt is claimed again only once it can no longer be running.
		d.lease = max(d.lease, h.Timeout+5*time.Second)
	}
	return d, nil
}

// Route names the webhooks of app that asked for event: the store's router.
func (d *Deliverer) Route(app, event string) []string { return d.routes[[2]string{app, event}] }

// Wake tells it the outbox may have grown (after a commit). It never blocks.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends. It first makes every attempt a previous process left
// held due now: on one node, that process is gone. (With no webhooks configured it
// still runs: deliveries of a webhook that was removed are dead-lettered, not left.)
func (d *Deliverer) Run(ctx context.Context) {
	if err := d.outbox.ReleaseDeliveries(ctx, d.opts.Clock()); err != nil {
		d.report(err)
	}
	for {
		_, err := d.DeliverDue(ctx)
		if err != nil && ctx.Err() == nil {
			d.report(err)
		}
		var next time.Time
		var due bool
		if err == nil {
			next, due, err = d.outbox.NextDelivery(ctx)
		}
		timer := time.NewTimer(waitFor(err, next, due, d.opts.Clock(), d.opts.Poll))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-d.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// waitFor is how long Run waits before it looks at the outbox again: until the next
// delivery is due, at most poll; after an error of the outbox itself, poll.
func waitFor(err error, next time.Time, due bool, now time.Time, poll time.Duration) time.Duration {
	if err != nil || !due {
		return poll
	}
	return min(poll, max(next.Sub(now), 0))
}

func (d *Deliverer) report(err error) {
	if d.opts.OnError != nil {
		d.opts.OnError(err)
	}
}

// parallel is how many deliveries are attempted at once. Each claim takes no more
// than that, so every attempt starts as soon as it is held.
const parallel = 8

// DeliverDue makes one attempt of every delivery due now, several at once, and
// returns how many it attempted.
func (d *Deliverer) DeliverDue(ctx context.Context) (int, error) {
	total := 0
	for {
		batch, err := d.outbox.ClaimDeliveries(ctx, d.opts.Clock(), d.lease, parallel)
		if err != nil || len(batch) == 0 {
			return total, err
		}
		total += len(batch)
		var wg sync.WaitGroup
		errs := make([]error, len(batch))
		for i, dl := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = d.attempt(ctx, dl)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return total, err
		}
		if len(batch) < parallel {
			return total, nil
		}
	}
}

// attempt sends one delivery once and records what came of it.
func (d *Deliverer) attempt(ctx context.Context, dl projection.Delivery) error {
	dead := func(why string) error {
		return d.outbox.RecordDelivery(ctx, dl.ID, dl.Attempts, projection.DeliveryOutcome{Status: projection.DeliveryDead, At: d.opts.Clock(), Error: why})
	}
	hook, ok := d.hooks[[2]string{dl.App, dl.Webhook}]
	if !ok {
		return dead(fmt.Sprintf("app %s has no webhook named %s now", dl.App, dl.Webhook))
	}
	ev, err := d.outbox.DeliveryEvent(ctx, dl)
	if events.IsCode(err, events.CodeCorruptLog) {
		return dead(err.Error()) // its event is gone: no attempt can send it
	}
	if err != nil {
		return err
	}
	status, sendErr := d.send(ctx, hook, dl, ev)
	if ctx.Err() != nil {
		return nil // stopping: the lease runs out, and the next start sends it again
	}
	now := d.opts.Clock()
	out := projection.DeliveryOutcome{At: now, HTTPStatus: status, Status: projection.DeliveryDelivered}
	if sendErr != nil {
		out.Error = sendErr.Error()
		out.Status, out.NextAt = projection.DeliveryPending, now.Add(hook.wait(dl.Attempts))
		if dl.Attempts >= hook.MaxAttempts {
			out.Status = projection.DeliveryDead
		}
	}
	return d.outbox.RecordDelivery(ctx, dl.ID, dl.Attempts, out)
}
