package httpapi

import (
	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// withPlan follows the stream events of a log event with a "plan" event when the log
// event changed the session's plan (an update_plan that succeeded): the plan as it now
// stands, under the same id.
func withPlan(ev events.Event, out []outEvent) []outEvent {
	if ev.Type != events.TypeToolResulted || gjson.GetBytes(ev.Data, "tool").String() != "update_plan" || gjson.GetBytes(ev.Data, "is_error").Bool() {
		return out
	}
	p, err := projection.PlanOf(ev)
	if err != nil {
		return out
	}
	return append(out, outEvent{ev.Seq, "plan", map[string]any{"turn_id": ev.Turn, "plan": p}})
}
