package httpapi

import (
	"github.com/labstack/echo/v4"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/turns"
)

// DefaultIdempotencyTTL is how long an Idempotency-Key is remembered.
const DefaultIdempotencyTTL = turns.DefaultKeyTTL

// HeaderIdempotencyKey makes a write request safe to repeat.
const HeaderIdempotencyKey = turns.KeyField

// CodeIdempotencyMismatch: an Idempotency-Key used again with another body or route.
const CodeIdempotencyMismatch = events.CodeIdempotencyMismatch

// IdempotencyKeys is where write requests' Idempotency-Keys are kept (the store), per
// user, across restarts (see turns.Keys).
type IdempotencyKeys = turns.Keys

// keyOf is what makes a write request safe to repeat (turns.Key): the caller, its
// Idempotency-Key, the route it was sent to and its body. The rules of keys — one
// request per key, a repeat answered from what the first made — are the turns
// service's.
func keyOf(c echo.Context, body []byte) turns.Key {
	return turns.Key{Owner: userOf(c), Value: c.Request().Header.Get(HeaderIdempotencyKey),
		Route: c.Request().Method + " " + c.Request().URL.Path, Body: body}
}
