// Package httpapi is turnlog's REST interface on echo: routes, JSON request decoding
// (size-limited, unknown fields refused), bearer-key users, and the mapping of
// turnlog error codes to HTTP statuses with the {"error": {"code", "message"}} shape.
//
// It calls the engine and reads projections; it never touches SQL, and no other
// turnlog package imports it.
package httpapi
