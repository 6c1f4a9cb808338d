package fsm

import (
	"strings"

	"github.com/turnlog/turnlog/events"
)

// recording indexes a turn's recorded events by (type, path): the replay rule looks
// an activity's result up here before executing anything.
type recording struct {
	events []events.Event
	byKey  map[string]int
}

func newRecording(evs []events.Event) *recording {
	r := &recording{events: evs, byKey: make(map[string]int, len(evs))}
	for i, ev := range evs {
		r.byKey[ev.Type+"\x00"+ev.Path] = i
	}
	return r
}

func (r *recording) get(typ, path string) (events.Event, bool) {
	if r == nil {
		return events.Event{}, false
	}
	i, ok := r.byKey[typ+"\x00"+path]
	if !ok {
		return events.Event{}, false
	}
	return r.events[i], true
}

func (r *recording) has(typ, path string) bool {
	_, ok := r.get(typ, path)
	return ok
}

// holds says whether ev is in the recording already, so that emit skips it. A
// turn's suspension is one only while the turn still waits: once a TurnResumed
// follows it, the turn's next suspension is a new one.
func (r *recording) holds(ev events.Event) bool {
	if ev.Type != events.TypeTurnSuspended {
		return r.has(ev.Type, ev.Path)
	}
	if r == nil {
		return false
	}
	s, ok := r.byKey[events.TypeTurnSuspended+"\x00"]
	if !ok {
		return false
	}
	resumed, ok := r.byKey[events.TypeTurnResumed+"\x00"]
	return !ok || resumed < s
}

// requestItems rebuilds the conversation a recorded model call at path carried:
// the committed history, then the new items of each recorded call up to path.
func (r *recording) requestItems(history []events.Item, path string) ([]events.Item, error) {
	items := append([]events.Item(nil), history...)
	own := lane(path)
	for _, ev := range r.events {
		if ev.Type != events.TypeModelCalled || strings.Contains(ev.Path, "/guardrail/") || lane(ev.Path) != own {
			continue // a guardrail judge's call, or another (nested) run's, is not part of this conversation
		}
		mc, err := events.DecodeAs[*events.ModelCalled](ev)
		if err != nil {
			return nil, err
		}
		items = append(items, mc.NewItems...)
		if ev.Path == path {
			break
		}
	}
	return items, nil
}
