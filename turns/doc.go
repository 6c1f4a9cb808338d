// Package turns is the application path of turns: what a request to start, resume,
// continue, queue or cancel a turn — or to create a session, branch or compact —
// does, the same whichever transport carries it. The REST API (httpapi), the web
// inspector and the Go library (pkg/turnlog) decode their requests into a Request,
// call a Service, and encode the Outcome; the rules live here once:
//
//   - an Idempotency-Key makes a write act once: the first request with it claims
//     it in the store (Keys), what it made is recorded against it, and a repeat —
//     on any transport, on any node, after its first request's process died — is
//     answered from that, never by acting again (keys.go, adopt.go);
//   - on_busy: input for a busy session is refused, queued, or queued to interrupt
//     the running turn, as the request or its app says (run.go);
//   - background runs, and a stream's Last-Event-ID continuing the turn it belongs
//     to instead of starting another (run.go);
//   - a conflict from the run that has just ended (the log says no turn runs, but
//     its run still holds the session) is waited out, not returned (run.go);
//   - a turn's result as the log holds it, for a repeat or a reconnect (results.go).
//
// It owns no state beyond the keys in flight in this process; the log, the queue
// and the keys are the store's. It must never know a transport: no HTTP status, no
// form, no echo — a transport maps its errors with events.HTTPStatus. Its errors
// name fields by turnlog's names for them (Idempotency-Key, Last-Event-ID,
// resume_map, as docs/api.md spells them), whichever transport carried them.
package turns
