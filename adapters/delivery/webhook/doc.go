// Package webhook delivers the outbox the store writes with every event a webhook
// asked for (a turn committed, failed, suspended for a person, canceled): it posts
// the event's payload, signed like an HTTP tool's request (the delivery id is the
// Idempotency-Key), retries with exponential backoff to a cap, and dead-letters a
// delivery whose attempts are spent. Delivery is at least once: a receiver
// deduplicates by the delivery id, which is the same at every attempt.
//
// It must never write the outbox rows itself (the store does, in the transaction of
// the event that causes them), follow a redirect, or decide what a turn does.
package webhook
