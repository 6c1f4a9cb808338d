package fsm

import "context"

type requestIDKey struct{}

// WithRequestID tells the engine which request asks for what ctx carries, so the
// turn it starts, resumes or cancels names the request when it ends (TurnEnd,
// TurnBreak). The id is for logs only: it is never recorded in the log.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDOf is the request id WithRequestID put in ctx ("" when none).
func RequestIDOf(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

type requestKeyKey struct{}

// WithRequestKey tells the engine the digest of the Idempotency-Key of the request
// that asks for what ctx carries: the turn StartTurn starts records it in its
// TurnStarted (RequestKey).
func WithRequestKey(ctx context.Context, digest string) context.Context {
	return context.WithValue(ctx, requestKeyKey{}, digest)
}

func requestKeyOf(ctx context.Context) string {
	k, _ := ctx.Value(requestKeyKey{}).(string)
	return k
}
