package sqlrows

import "sync"

// Watchers wakes readers that follow a session live (SSE) when a commit adds events
// to it. A wake-up carries no data: the watcher reads the log after its last seq.
type Watchers struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// Watch returns a channel that receives after each commit that appends to session,
// and a function to stop watching. Register before reading, so no commit is missed.
func (w *Watchers) Watch(session string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.subs == nil {
		w.subs = map[string]map[chan struct{}]struct{}{}
	}
	if w.subs[session] == nil {
		w.subs[session] = map[chan struct{}]struct{}{}
	}
	w.subs[session][ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.subs[session], ch)
		if len(w.subs[session]) == 0 {
			delete(w.subs, session)
		}
		w.mu.Unlock()
	}
}

// Notify wakes the watchers of every session in sessions.
func (w *Watchers) Notify(sessions map[string]int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range sessions {
		for ch := range w.subs[s] {
			select { // one pending wake-up is enough: the reader catches up on all
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// NotifyAll wakes every watcher: after a gap in what a store heard (a lost
// connection), each catches up by reading after its last seq.
func (w *Watchers) NotifyAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, subs := range w.subs {
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
