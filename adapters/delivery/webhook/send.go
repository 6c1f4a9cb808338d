package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/adapters/tools/httptool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// Headers a delivery carries besides the Idempotency-Key (its delivery id) and the
// signature, which are the HTTP tools' own.
const (
	HeaderDelivery = "Turnlog-Delivery"
	HeaderEvent    = "Turnlog-Event"
)

// Payload is the body of a delivery: canonical JSON, the same bytes at every attempt.
func Payload(dl projection.Delivery, ev events.Event) ([]byte, error) {
	data, err := projection.WebhookData(ev)
	if err != nil {
		return nil, err
	}
	return events.Marshal(projection.WebhookPayload{ID: dl.ID, Event: dl.Event, CreatedAt: ev.At, App: dl.App,
		Session: dl.Session, Turn: dl.Turn, Seq: dl.Seq, Data: data})
}

// send posts one attempt. It returns the receiver's status, and an error unless the
// receiver answered 2xx.
func (d *Deliverer) send(ctx context.Context, hook Hook, dl projection.Delivery, ev events.Event) (int, error) {
	body, err := Payload(dl, ev)
	if err != nil {
		return 0, err
	}
	u, err := url.Parse(hook.URL)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, hook.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "turnlog-webhooks")
	req.Header.Set(httptool.HeaderIdempotencyKey, dl.ID)
	req.Header.Set(HeaderDelivery, dl.ID)
	req.Header.Set(HeaderEvent, dl.Event)
	req.Header.Set(httptool.HeaderAttempt, strconv.Itoa(dl.Attempts))
	if len(hook.Secrets) > 0 {
		req.Header.Set(httptool.HeaderSignature, httptool.Signature(hook.Secrets, d.opts.Clock().Unix(), dl.ID, http.MethodPost, u.RequestURI(), body))
	}
	res, err := d.opts.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post %s: %w", hook.URL, unwrapURL(err))
	}
	defer res.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		msg := strings.TrimSpace(string(head))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return res.StatusCode, fmt.Errorf("the receiver answered %d %s", res.StatusCode, msg)
	}
	return res.StatusCode, nil
}

func unwrapURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
