package httpapi

import (
	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
)

// outEvent is a stream event ready to send.
type outEvent struct {
	seq  int64
	name string
	data any
}

// textGate holds an answer's recorded text (the text_delta of a ModelCalled) until
// what follows it in the log shows whether people may see it: a guardrail that
// trips, a review that holds the response, or a turn the policy failed drop it; any
// other event sends it, just before that event. (A guardrail that only checked
// decides nothing yet.)
type textGate struct {
	held *outEvent
	turn string
}

// pass takes the next event of the log and how it renders ("" name: not sent), and
// returns what to send now, in order.
func (g *textGate) pass(ev events.Event, name string, data any) []outEvent {
	var out []outEvent
	if g.held != nil && ev.Turn == g.turn {
		switch ev.Type {
		case events.TypeGuardrailChecked:
			// not decided yet
		case events.TypeGuardrailTripped, events.TypeReviewRequested:
			g.held = nil
		case events.TypeTurnFailed:
			if gjson.GetBytes(ev.Data, "error_code").String() != string(events.CodePolicyDenied) {
				out = append(out, *g.held)
			}
			g.held = nil
		default:
			out = append(out, *g.held)
			g.held = nil
		}
	}
	if name == "text_delta" && ev.Type == events.TypeModelCalled {
		g.held, g.turn = &outEvent{ev.Seq, name, data}, ev.Turn
		return out
	}
	if name != "" {
		out = append(out, outEvent{ev.Seq, name, data})
	}
	return out
}
