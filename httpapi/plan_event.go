package httpapi

import (
	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// withPlan follows the stream events of a log event with a "plan" event when the log
// event changed the session's plan (an update_plan that succeeded) and its own event
// went out: the plan as it now stands, under the same id (a client that reconnects
// after that id reads the plan from GET /v1/sessions/{id}/plan).
func withPlan(ev events.Event, out []outEvent) []outEvent {
	if len(out) == 0 || out[len(out)-1].seq != ev.Seq || ev.Type != events.TypeToolResulted || gjson.GetBytes(ev.Data, "tool").String() != "update_plan" || gjson.GetBytes(ev.Data, "is_error").Bool() {
		return out
	}
	p, err := projection.PlanOf(ev)
	if err != nil {
		return out
	}
	return append(out, outEvent{ev.Seq, "plan", map[string]any{"turn_id": ev.Turn, "plan": p}})
}
