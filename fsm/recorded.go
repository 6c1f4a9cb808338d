package fsm

import (
	"context"
	"sync"
)

// A tool whose side effect must be kept only if its result reaches the log — the
// sandbox's apply of a command's writes, which keeps what it replaced until then —
// asks the engine, through the call's context, to tell it when the result is
// durable (OnRecorded).

type recordedKey struct{}

// recordedHooks are what a call's tool asked to run once its result is in the log,
// or is known never to get there.
type recordedHooks struct {
	mu       sync.Mutex
	fns      []func(recorded bool)
	fired    bool
	recorded bool
}

// OnRecorded asks that fn run once the result of the tool call ctx carries is
// durable in the log (recorded true) or will never be (false: the turn failed
// first, or the log refused it). It says whether the engine will call it: a tool
// called with no engine behind ctx settles at once. Asked after the result was
// settled, fn runs at once with how it was.
func OnRecorded(ctx context.Context, fn func(recorded bool)) bool {
	h, ok := ctx.Value(recordedKey{}).(*recordedHooks)
	if !ok {
		return false
	}
	h.mu.Lock()
	if h.fired {
		recorded := h.recorded
		h.mu.Unlock()
		fn(recorded)
		return true
	}
	h.fns = append(h.fns, fn)
	h.mu.Unlock()
	return true
}

func withRecordedHooks(ctx context.Context, h *recordedHooks) context.Context {
	return context.WithValue(ctx, recordedKey{}, h)
}

// fire runs the hooks once.
func (h *recordedHooks) fire(recorded bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.fired {
		h.mu.Unlock()
		return
	}
	h.fired, h.recorded = true, recorded
	fns := h.fns
	h.fns = nil
	h.mu.Unlock()
	for _, fn := range fns {
		fn(recorded)
	}
}
