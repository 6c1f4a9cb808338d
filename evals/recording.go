package evals

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/turnlog/turnlog/events"
)

// RecordingFormat names the file a recorded suite is kept in.
const RecordingFormat = "turnlog-eval-recording"

// Recording is a recorded eval run (turnlog eval --record): each run of a case with
// its session's events, and the judges' verdicts. A later run with it as its Replay
// checks the recordings again — the checks as the suite says now — calling no model
// but a judge whose request changed, and that only when allowed.
type Recording struct {
	Format  string         `json:"format"`
	Version int            `json:"version"`
	Suite   string         `json:"suite"`
	App     string         `json:"app"`
	Run     string         `json:"run_id"`
	Runs    []RecordedRun  `json:"runs"`
	Verdict []events.Event `json:"verdicts,omitempty"` // EvalJudged, as the run's own log keeps them
}

// RecordedRun is one run of a case: its inputs and the approvals it gave, its session
// and events, what ended it before any check (a question the case had no answer
// for), and its time.
type RecordedRun struct {
	Case        string         `json:"case"`
	Attempt     int            `json:"attempt"`
	Inputs      []string       `json:"inputs"`
	Approve     []Answer       `json:"approve,omitempty"`
	Session     string         `json:"session_id"`
	RunFailures []string       `json:"run_failures,omitempty"`
	TookMS      int64          `json:"took_ms"`
	Events      []events.Event `json:"events"`
}

// ReadRecording reads a recording written by Write. Errors name the file and what
// is wrong with it.
func ReadRecording(path string) (*Recording, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	var rec Recording
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, events.FieldError(events.CodeInvalid, "replay", "%s is no eval recording: %v", path, err)
	}
	if rec.Format != RecordingFormat || rec.Version != 1 {
		return nil, events.FieldError(events.CodeInvalid, "replay", "%s is no eval recording (format %q, version %d; want %q, 1)",
			path, rec.Format, rec.Version, RecordingFormat)
	}
	for i, ev := range rec.Verdict {
		if ev.Type != events.TypeEvalJudged {
			return nil, events.FieldError(events.CodeInvalid, fmt.Sprintf("verdicts[%d]", i), "%s: is a %s, not an EvalJudged", path, ev.Type)
		}
	}
	return &rec, nil
}

// Write writes the recording to path (0600: it holds what the sessions said).
func (rec *Recording) Write(path string) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o600)
}

// verdicts indexes the recording's verdicts by the run and request they judged.
func (rec *Recording) verdicts() (map[verdictKey]events.EvalJudged, error) {
	out := map[verdictKey]events.EvalJudged{}
	for _, ev := range rec.Verdict {
		v, err := events.DecodeAs[*events.EvalJudged](ev)
		if err != nil {
			return nil, events.FieldError(events.CodeInvalid, "replay", "a verdict of the recording: %v", err)
		}
		key := verdictKey{v.Case, v.Attempt, v.RequestHash, 0}
		for _, taken := out[key]; taken; _, taken = out[key] {
			key.nth++
		}
		out[key] = *v
	}
	return out, nil
}

// runsOf are the recorded runs of each of the suite's cases, refused where a case
// was not recorded, ran other inputs or approvals, or another number of times (a
// replay checks what ran; it runs nothing).
func (rec *Recording) runsOf(s *Suite) (map[string][]*RecordedRun, error) {
	if rec.App != s.App {
		return nil, events.FieldError(events.CodeInvalid, "app", "the recording ran app %q, the suite names %q", rec.App, s.App)
	}
	out := map[string][]*RecordedRun{}
	for i := range rec.Runs {
		r := &rec.Runs[i]
		out[r.Case] = append(out[r.Case], r)
	}
	for i, c := range s.Cases {
		runs := out[c.Name]
		if len(runs) == 0 {
			return nil, events.FieldError(events.CodeInvalid, fmt.Sprintf("cases[%d]", i),
				"case %q is not in the recording (run %s): run the suite without --replay to record it", c.Name, rec.Run)
		}
		for _, r := range runs {
			if !slices.Equal(r.Inputs, c.Inputs) {
				return nil, events.FieldError(events.CodeInvalid, fmt.Sprintf("cases[%d].inputs", i),
					"case %q ran other inputs in the recording (%q): a replay checks what ran, run the suite to record it anew", c.Name, r.Inputs)
			}
			if !slices.Equal(r.Approve, c.Approve) {
				return nil, events.FieldError(events.CodeInvalid, fmt.Sprintf("cases[%d].approve", i),
					"case %q gave other approvals in the recording (%v): a replay checks what ran, run the suite to record it anew", c.Name, r.Approve)
			}
		}
		if len(runs) != c.Runs {
			return nil, events.FieldError(events.CodeInvalid, fmt.Sprintf("cases[%d].runs", i),
				"case %q ran %d times in the recording, the suite asks %d: a replay checks what ran, run the suite to record it anew", c.Name, len(runs), c.Runs)
		}
	}
	return out, nil
}
