package fsm

import "github.com/turnlog/turnlog/events"

// replayed is the replay rule, once, for every activity of a turn — a model call, a
// judge's verdict, a compaction, a skill load, a tool's result: the event of kind typ
// the recording holds at path, decoded (found: the caller uses it and acts on
// nothing; an event that does not decode is corrupt_log), or none — and then the
// caller acts live and records what it gives, unless the engine replays only, which
// never acts: the recording diverges there, and refused (the caller's words for what
// is missing) is the nondeterminism failure. refused "" leaves the refusal to the
// caller (the tool step refuses the calls it would run once all are planned).
func replayed[P events.Payload](r *run, typ, path, refused string) (P, events.Event, bool, *ResultError) {
	var none P
	ev, ok := r.rec.get(typ, path)
	if !ok {
		if r.e.opts.ReplayOnly && refused != "" {
			return none, events.Event{}, false, &ResultError{Code: events.CodeNondeterminism, Path: path, Message: refused}
		}
		return none, events.Event{}, false, nil
	}
	p, err := events.DecodeAs[P](ev)
	if err != nil {
		return none, ev, true, &ResultError{Code: events.CodeCorruptLog, Path: path, Message: err.Error()}
	}
	return p, ev, true, nil
}
