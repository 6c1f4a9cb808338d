package fsm

import (
	"sync"
	"sync/atomic"
)

// Delta is a piece of a model's answer as it arrives. It is transient: never
// recorded, never replayed; the answer itself is in the ModelCalled event.
type Delta struct {
	Session, Turn, Path string
	Text                string
	// After is the seq of the session's log the answer was computed after: a stream
	// sends the events up to it before the delta, so text never precedes the tool
	// results (or nested agents' ends) it depends on.
	After int64
	// Index numbers the pieces of one model call's answer from 0: a reader that did
	// not get them all from the first shows the recorded answer.
	Index int
}

// DeltaSub is one reader of a session's text deltas.
type DeltaSub struct {
	C       <-chan Delta
	c       chan Delta
	dropped atomic.Bool
}

// Dropped reports whether a delta was lost because the reader fell behind; such a
// reader should show the recorded answer instead of what it pieced together.
func (s *DeltaSub) Dropped() bool { return s.dropped.Load() }

// deltaHub fans deltas out to the readers of a session's live stream.
type deltaHub struct {
	mu   sync.Mutex
	subs map[string]map[*DeltaSub]struct{}
}

// Deltas subscribes to a session's text deltas until stop is called. A reader that
// falls behind loses deltas (they are transient) and never blocks the turn.
func (e *Engine) Deltas(session string) (*DeltaSub, func()) {
	h := &e.deltas
	c := make(chan Delta, 1024)
	sub := &DeltaSub{C: c, c: c}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[string]map[*DeltaSub]struct{}{}
	}
	if h.subs[session] == nil {
		h.subs[session] = map[*DeltaSub]struct{}{}
	}
	h.subs[session][sub] = struct{}{}
	h.mu.Unlock()
	return sub, func() {
		h.mu.Lock()
		delete(h.subs[session], sub)
		if len(h.subs[session]) == 0 {
			delete(h.subs, session)
		}
		h.mu.Unlock()
	}
}

func (h *deltaHub) publish(d Delta) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs[d.Session] {
		select {
		case sub.c <- d:
		default:
			sub.dropped.Store(true)
		}
	}
}
