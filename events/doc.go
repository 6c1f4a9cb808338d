// Package events owns turnlog's vocabulary of facts: the event envelope, the typed
// event payloads with their schema versions, canonical JSON, conversation items, the
// error codes shared by every layer (and the one table of the HTTP statuses they are
// answered with), the limits a document from outside and one the log keeps must stay
// within, and the Store port that persists events.
//
// It must never import another turnlog package, touch a database, read the wall
// clock or make IDs on its own: time and identifiers arrive from injected sources.
package events
