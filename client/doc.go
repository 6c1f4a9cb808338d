// Package client is a typed Go client of turnlog's REST API: one method per route,
// the request and response bodies as the API documents them (/openapi.yaml), errors
// as *Error with the API's code, and turn and event streams read as SSE with their
// ids, so a caller can reconnect with Last-Event-ID.
//
// It must never import the server's packages (it speaks only HTTP and JSON, so a
// program using it does not link the engine), retry a write by itself, or hide an
// error code.
package client
