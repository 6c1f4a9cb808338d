package projection

import (
	"encoding/json"
	"time"

	"github.com/turnlog/turnlog/events"
)

// EvalResultAdded keeps one run of an eval case (EvalCaseRun) in the eval_results
// read model: the eval run's log and the event's seq, and what the run came to.
type EvalResultAdded struct {
	Log      string // the eval run's own log (a session)
	Seq      int64
	Result   events.EvalCaseRun
	Failures json.RawMessage // the failures as JSON (null: none)
	// NeedsJudge are the judged checks waiting for a judge, as JSON (null: none).
	NeedsJudge json.RawMessage
	At         time.Time
}

func (EvalResultAdded) change() {}
