package projection

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
)

// Plan is a session's latest plan (update_plan): its goal and steps, and the call
// that set it (in the session, or in a session it was branched from before the
// branch point).
type Plan struct {
	Goal    string     `json:"goal,omitempty"`
	Items   []PlanItem `json:"items"`
	Session string     `json:"session_id"`
	Turn    string     `json:"turn_id"`
	Seq     int64      `json:"seq"`
	Path    string     `json:"path"`
	At      time.Time  `json:"at"`
}

// PlanItem is one step of a plan: pending, in_progress or done.
type PlanItem struct {
	Text   string `json:"text"`
	Status string `json:"status"`
}

// PlanOf folds a successful update_plan result into the plan it sets.
func PlanOf(ev events.Event) (Plan, error) {
	tr, err := events.DecodeAs[*events.ToolResulted](ev)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Session: ev.Session, Turn: ev.Turn, Seq: ev.Seq, Path: ev.Path, At: ev.At}
	if err := json.Unmarshal([]byte(tr.Output), &p); err != nil {
		return Plan{}, fmt.Errorf("the plan at %s seq %d: %w", ev.Session, ev.Seq, err)
	}
	if p.Items == nil {
		p.Items = []PlanItem{}
	}
	return p, nil
}
