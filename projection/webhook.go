package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/turnlog/turnlog/events"
)

// Webhook event kinds: what a webhook may ask to be told of.
const (
	WebhookTurnCommitted = "turn.committed"
	WebhookTurnFailed    = "turn.failed"
	WebhookTurnSuspended = "turn.suspended" // waiting for a person
	WebhookTurnCanceled  = "turn.canceled"
)

// WebhookEvents lists every kind, in documentation order.
var WebhookEvents = []string{WebhookTurnCommitted, WebhookTurnFailed, WebhookTurnSuspended, WebhookTurnCanceled}

// WebhookEventOf is the kind an event type causes, or "" for none.
func WebhookEventOf(eventType string) string {
	switch eventType {
	case events.TypeTurnCommitted:
		return WebhookTurnCommitted
	case events.TypeTurnFailed:
		return WebhookTurnFailed
	case events.TypeTurnSuspended:
		return WebhookTurnSuspended
	case events.TypeTurnCanceled:
		return WebhookTurnCanceled
	}
	return ""
}

// DeliveryID names the delivery of one event to one webhook: the same every time it
// is made, so a receiver deduplicates by it.
func DeliveryID(app, webhook, session string, seq int64) string {
	sum := sha256.Sum256([]byte("turnlog-webhook\x00" + app + "\x00" + webhook + "\x00" + session + "\x00" + strconv.FormatInt(seq, 10)))
	return "whd_" + hex.EncodeToString(sum[:16])
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

const (
	DeliveryPending   DeliveryStatus = "pending"   // due at NextAt
	DeliverySending   DeliveryStatus = "sending"   // an attempt holds it until NextAt
	DeliveryDelivered DeliveryStatus = "delivered" // the receiver answered 2xx
	DeliveryDead      DeliveryStatus = "dead"      // every attempt failed: dead-lettered
)

// Delivery is one event on its way to one webhook.
type Delivery struct {
	ID          string         `json:"id"`
	App         string         `json:"app"`
	Webhook     string         `json:"webhook"`
	Event       string         `json:"event"`
	Session     string         `json:"session_id"`
	Turn        string         `json:"turn_id"`
	Seq         int64          `json:"seq"`
	Status      DeliveryStatus `json:"status"`
	Attempts    int            `json:"attempts"`
	NextAt      *time.Time     `json:"next_at,omitempty"` // pending or sending only
	CreatedAt   time.Time      `json:"created_at"`
	DeliveredAt *time.Time     `json:"delivered_at,omitempty"`
	LastStatus  int            `json:"last_status,omitempty"`
	LastError   string         `json:"last_error,omitempty"`
}

// DeliveryFilter narrows a listing of deliveries; After pages (the last id seen).
type DeliveryFilter struct {
	Status  DeliveryStatus
	Webhook string
	Session string
	After   string
	Limit   int
}

// DeliveryOutcome is what one attempt came to.
type DeliveryOutcome struct {
	Status     DeliveryStatus // delivered, pending (tried again at NextAt) or dead
	NextAt     time.Time
	At         time.Time
	HTTPStatus int
	Error      string
}

// WebhookPayload is the body a delivery sends: the same bytes at every attempt.
type WebhookPayload struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	CreatedAt time.Time       `json:"created_at"`
	App       string          `json:"app"`
	Session   string          `json:"session_id"`
	Turn      string          `json:"turn_id"`
	Seq       int64           `json:"seq"`
	Data      json.RawMessage `json:"data"`
}

// WebhookData is what a payload says of the turn, from the event that ended or
// paused it: committed gives the output, failed the error, suspended the interrupts
// waiting for people, canceled the reason.
func WebhookData(ev events.Event) (json.RawMessage, error) {
	p, err := events.Decode(ev)
	if err != nil {
		return nil, err
	}
	var data any
	switch e := p.(type) {
	case *events.TurnCommitted:
		data = map[string]any{"status": "completed", "agent": e.Agent, "output": e.Output, "usage": e.Usage}
	case *events.TurnFailed:
		data = map[string]any{"status": "failed", "error": map[string]any{"code": e.ErrorCode, "message": e.Message, "path": e.Path}, "usage": e.Usage}
	case *events.TurnSuspended:
		data = map[string]any{"status": "suspended", "interrupts": e.Interrupts, "usage": e.Usage}
	case *events.TurnCanceled:
		data = map[string]any{"status": "canceled", "reason": e.Reason, "usage": e.Usage}
	default:
		return nil, events.Errorf(events.CodeInvalid, "event %s causes no webhook", ev.Type)
	}
	return events.Marshal(data)
}

// WebhookRouter names the webhooks of app that asked to be told of event (a
// Webhook* kind).
type WebhookRouter func(app, event string) []string
