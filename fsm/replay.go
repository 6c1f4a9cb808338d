package fsm

import (
	"context"
	"fmt"
	"sort"

	"github.com/turnlog/turnlog/events"
)

// ReplayReport summarises a replay that matched its recording.
type ReplayReport struct {
	Session string
	Turns   int
	Events  int
}

// Divergence is the first place a replay's log differs from the recording.
type Divergence struct {
	Seq   int64
	Type  string
	Path  string
	Field string
	Want  string // recorded
	Got   string // replayed
}

// DivergedError is a replay's nondeterminism error with what differs: a
// *NondeterminismError (what a request would send now) or a *Divergence (an event of
// the replayed log). errors.As finds either, and the *events.Error.
type DivergedError struct {
	Err   *events.Error
	Cause error
}

func (e *DivergedError) Error() string   { return e.Err.Error() }
func (e *DivergedError) Unwrap() []error { return []error{e.Err, e.Cause} }

// DivergenceError reports a Divergence as a nondeterminism error.
func (d *Divergence) Error() string {
	where := fmt.Sprintf("seq %d %s", d.Seq, d.Type)
	if d.Path != "" {
		where += " at " + d.Path
	}
	return fmt.Sprintf("replay diverges at %s: %s: recorded %s, replayed %s", where, d.Field, d.Want, d.Got)
}

// Replay re-drives every turn of a recorded session on this engine, whose store must
// not hold that session yet. Each activity takes its recorded result; what the code
// would now send differently fails with nondeterminism naming the path and field, and
// the replayed log must equal the recording event for event.
//
// A branch's recording (Recording) starts with the sessions it was branched from,
// oldest first, each up to where the next one branched from it: those are replayed
// first, in the same way, and the report names the last session.
// Errors: corrupt_log (the recording cannot be read), nondeterminism.
func (e *Engine) Replay(ctx context.Context, recorded []events.Event) (*ReplayReport, error) {
	return e.replayFrom(ctx, recorded, map[string]int64{})
}

// ReplayOnto is Replay for a recording that may start with a branch of a session
// this store holds already (replayed before on it): the store must reach the
// branch point.
func (e *Engine) ReplayOnto(ctx context.Context, recorded []events.Event) (*ReplayReport, error) {
	reached := map[string]int64{}
	if len(recorded) > 0 && recorded[0].Type == events.TypeSessionBranched {
		sb, err := events.DecodeAs[*events.SessionBranched](recorded[0])
		if err != nil {
			return nil, err
		}
		last, err := e.store.LastSeq(ctx, sb.SourceSession)
		if err != nil {
			return nil, err
		}
		reached[sb.SourceSession] = last
	}
	return e.replayFrom(ctx, recorded, reached)
}

func (e *Engine) replayFrom(ctx context.Context, recorded []events.Event, reached map[string]int64) (*ReplayReport, error) {
	sessions, err := splitRecordingFrom(recorded, reached)
	if err != nil {
		return nil, err
	}
	rep := &ReplayReport{}
	for _, rec := range sessions {
		if err := e.replaySession(ctx, rec, rep); err != nil {
			return nil, err
		}
		rep.Session = rec[0].Session
	}
	return rep, nil
}

// replaySession replays one session's part of a recording, adding to rep.
func (e *Engine) replaySession(ctx context.Context, recorded []events.Event, rep *ReplayReport) error {
	session := recorded[0].Session
	if _, err := e.appendEvents(ctx, session, 0, recorded[:1], false); err != nil {
		return fmt.Errorf("replay %s: %w", session, err)
	}
	rep.Events++
	for i := 1; i < len(recorded); {
		start := recorded[i]
		if betweenTurns(start) { // input that waited between turns, a revert: appended as it came
			if _, err := e.appendEvents(ctx, session, start.Seq-1, recorded[i:i+1], false); err != nil {
				return fmt.Errorf("replay %s: %w", session, err)
			}
			rep.Events++
			i++
			continue
		}
		if start.Type != events.TypeTurnStarted {
			return &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("session %s seq %d", session, start.Seq),
				Message: fmt.Sprintf("expected TurnStarted, found %s", start.Type)}
		}
		end := i + 1
		for end < len(recorded) && recorded[end].Type != events.TypeTurnStarted {
			end++
		}
		for end > i+1 && betweenTurns(recorded[end-1]) { // after the turn ended: between turns
			end--
		}
		if err := e.replayTurn(ctx, recorded[i:end]); err != nil {
			return err
		}
		rep.Turns++
		rep.Events += end - i
		i = end
	}
	return nil
}

// splitRecordingFrom checks a recording and cuts it into its sessions: each numbered
// from seq 1, the first created (or, when reached names sessions the store holds
// already, branched from one of them), every later one branched from one before it at
// a seq that one's part reaches. reached is how far each held session goes.
func splitRecordingFrom(recorded []events.Event, reached map[string]int64) ([][]events.Event, error) {
	if len(recorded) == 0 {
		return nil, events.Errorf(events.CodeCorruptLog, "the recording holds no events")
	}
	var sessions [][]events.Event
	held := len(reached) > 0 // reached: session → the last seq of its part
	for i, ev := range recorded {
		if _, err := events.Decode(ev); err != nil {
			return nil, err
		}
		if i == 0 || ev.Session != recorded[i-1].Session {
			if _, seen := reached[ev.Session]; seen {
				return nil, &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("line %d", i+1),
					Message: fmt.Sprintf("session %s comes back after another session's events", ev.Session)}
			}
			if err := checkSessionStart(ev, i, reached, held); err != nil {
				return nil, err
			}
			sessions = append(sessions, nil)
		}
		last := len(sessions) - 1
		if ev.Seq != int64(len(sessions[last])+1) {
			return nil, &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("line %d", i+1),
				Message: fmt.Sprintf("expected session %s seq %d, found seq %d", ev.Session, len(sessions[last])+1, ev.Seq)}
		}
		sessions[last] = append(sessions[last], ev)
		reached[ev.Session] = ev.Seq
	}
	return sessions, nil
}

// checkSessionStart checks the first event of a session's part of a recording (at
// line i): the first session is created; a later one is branched from a session
// before it, at a seq that session's part reaches.
func checkSessionStart(ev events.Event, i int, reached map[string]int64, held bool) error {
	if i == 0 && !(held && ev.Type == events.TypeSessionBranched) {
		switch ev.Type {
		case events.TypeSessionCreated:
			return nil
		case events.TypeSessionBranched:
			return events.Errorf(events.CodeCorruptLog, "the recording starts with SessionBranched: a branch's recording starts with the sessions it was branched from (turnlog export writes them)")
		}
		return events.Errorf(events.CodeCorruptLog, "the recording must start with SessionCreated, not %s", ev.Type)
	}
	if ev.Type != events.TypeSessionBranched {
		return &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("line %d", i+1),
			Message: fmt.Sprintf("session %s follows another session's events, so it must start with SessionBranched, not %s", ev.Session, ev.Type)}
	}
	sb, err := events.DecodeAs[*events.SessionBranched](ev)
	if err != nil {
		return err
	}
	if upto, ok := reached[sb.SourceSession]; !ok || upto < sb.SourceSeq {
		return &events.Error{Code: events.CodeCorruptLog, Field: fmt.Sprintf("line %d", i+1),
			Message: fmt.Sprintf("session %s is branched from %s at seq %d, which the recording before it does not reach", ev.Session, sb.SourceSession, sb.SourceSeq)}
	}
	return nil
}

func (e *Engine) replayTurn(ctx context.Context, rec []events.Event) error {
	start := rec[0]
	ts, err := events.DecodeAs[*events.TurnStarted](start)
	if err != nil {
		return err
	}
	s, err := e.store.Session(ctx, start.Session)
	if err != nil {
		return err
	}
	app, ok := e.apps[s.App]
	if !ok {
		return events.Errorf(events.CodeInvalid, "the recording uses app %q, which the config does not define", s.App)
	}
	agent, ok := app.Agents[ts.Agent]
	if !ok {
		return events.Errorf(events.CodeInvalid, "the recording uses agent %q, which app %s does not define", ts.Agent, s.App)
	}
	if _, err := e.appendEvents(ctx, start.Session, start.Seq-1, rec[:1], false); err != nil {
		return fmt.Errorf("replay turn %s: %w", start.Turn, err)
	}
	conv, err := e.conversation(ctx, s)
	if err != nil {
		return err
	}
	recording := newRecording(rec)
	queued := map[int64]events.Event{} // inputs queued while the turn ran (a revert while it waited): appended where they came
	for _, ev := range rec[1:] {
		if betweenTurns(ev) || ev.Type == events.TypeTurnRecovered { // a recovery is a fact, not an activity
			queued[ev.Seq] = ev
		}
	}
	r := e.newRun(ctx, app, agent, start.Session, s.Owner, s.ParentID, start.Turn, start.Seq, conv, recording, nil)
	r.log.queued = queued
	res, err := r.begin(ts.Input)
	for err == nil && res.Status == StatusSuspended {
		// The recording goes on with a person's answers: append them as they were
		// given, then re-drive the turn as a resume does.
		i := int(r.log.last() - start.Seq + 1)
		j := i
		for j < len(rec) && (rec[j].Type == events.TypeApprovalResolved || rec[j].Type == events.TypeGrantGiven || rec[j].Type == events.TypeReviewResolved || rec[j].Type == events.TypeBudgetResolved || rec[j].Type == events.TypeTurnResumed || betweenTurns(rec[j])) {
			j++
		}
		if j == i || rec[j-1].Type != events.TypeTurnResumed {
			break // the recording ends suspended
		}
		appended, aerr := e.appendEvents(ctx, start.Session, r.log.last(), rec[i:j], false)
		if aerr != nil {
			return fmt.Errorf("replay resume of %s: %w", start.Turn, aerr)
		}
		logged, lerr := e.store.Events(ctx, start.Session, start.Seq-1)
		if lerr != nil {
			return lerr
		}
		if conv, err = e.conversation(ctx, s); err != nil {
			return err
		}
		r = e.newRun(ctx, app, agent, start.Session, s.Owner, s.ParentID, start.Turn, appended[len(appended)-1].Seq, conv, recording, newRecording(logged))
		r.log.queued = queued
		res, err = r.begin(ts.Input)
	}
	if err != nil {
		return err
	}
	if res.Error != nil && res.Error.Code == events.CodeNondeterminism && !recordsFailure(rec, events.CodeNondeterminism) {
		out := &events.Error{Code: events.CodeNondeterminism, Field: res.Error.Path, Message: res.Error.Message}
		if nd := r.log.divergence; nd != nil {
			return &DivergedError{Err: out, Cause: nd}
		}
		return out
	}
	produced, err := e.store.Events(ctx, start.Session, start.Seq-1)
	if err != nil {
		return err
	}
	if d := firstDivergence(rec, produced); d != nil {
		return &DivergedError{Err: &events.Error{Code: events.CodeNondeterminism, Field: d.Path, Message: d.Error()}, Cause: d}
	}
	return nil
}

// betweenTurns says whether ev is a session's, not a turn's: an input queued or
// dropped, a revert of its files, a grant a person revoked, an eval run's record. A
// replay appends it where it came.
func betweenTurns(ev events.Event) bool {
	return isQueueEvent(ev) || ev.Turn == "" && (ev.Type == events.TypeWorkspaceReverted || ev.Type == events.TypeGrantRevoked ||
		ev.Type == events.TypeEvalRunStarted || ev.Type == events.TypeEvalCaseRun || ev.Type == events.TypeEvalJudged ||
		ev.Type == events.TypeEvalRunEnded)
}

func recordsFailure(rec []events.Event, code events.Code) bool {
	last := rec[len(rec)-1]
	if last.Type != events.TypeTurnFailed {
		return false
	}
	tf, err := events.DecodeAs[*events.TurnFailed](last)
	return err == nil && tf.ErrorCode == code
}

// canonicalOrder is the order a replay is compared in. Concurrent work appends in no
// fixed order: the results of one response's parallel tools (in each run of
// consecutive ToolResulted events, ordered here by path), and the runs of agent tools
// (each lane compared in its own order, the turn's own lane first, nested lanes by
// path). Everything else keeps the log's order.
func canonicalOrder(evs []events.Event) []events.Event {
	lanes := map[string][]events.Event{}
	var names []string
	for _, ev := range evs {
		l := lane(ev.Path)
		if _, ok := lanes[l]; !ok && l != "" {
			names = append(names, l)
		}
		lanes[l] = append(lanes[l], ev)
	}
	sort.Strings(names)
	out := make([]events.Event, 0, len(evs))
	for _, l := range append([]string{""}, names...) {
		part := lanes[l]
		for i := 0; i < len(part); {
			j := i
			for j < len(part) && part[j].Type == events.TypeToolResulted {
				j++
			}
			if j > i {
				sort.SliceStable(part[i:j], func(a, b int) bool { return part[i+a].Path < part[i+b].Path })
				i = j
				continue
			}
			i++
		}
		out = append(out, part...)
	}
	return out
}

func firstDivergence(rec, got []events.Event) *Divergence {
	rec, got = canonicalOrder(rec), canonicalOrder(got)
	for i := 0; i < len(rec) || i < len(got); i++ {
		switch {
		case i >= len(got):
			return &Divergence{Seq: rec[i].Seq, Type: rec[i].Type, Path: rec[i].Path, Field: "event", Want: rec[i].Type, Got: "nothing"}
		case i >= len(rec):
			return &Divergence{Seq: got[i].Seq, Type: got[i].Type, Path: got[i].Path, Field: "event", Want: "nothing", Got: got[i].Type}
		}
		a, b := rec[i], got[i]
		d := &Divergence{Seq: a.Seq, Type: a.Type, Path: a.Path}
		switch {
		case a.Type != b.Type:
			d.Field, d.Want, d.Got = "type", a.Type, b.Type
		case a.Path != b.Path:
			d.Field, d.Want, d.Got = "path", a.Path, b.Path
		case a.Turn != b.Turn:
			d.Field, d.Want, d.Got = "turn", a.Turn, b.Turn
		case a.V != b.V:
			d.Field, d.Want, d.Got = "v", fmt.Sprint(a.V), fmt.Sprint(b.V)
		case string(a.Data) != string(b.Data):
			field, want, got := jsonDiff(a.Data, b.Data)
			d.Field, d.Want, d.Got = "data"+field, want, got
		default:
			continue
		}
		return d
	}
	return nil
}
