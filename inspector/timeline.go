package inspector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// TimelinePage is how many of a turn's events a timeline page shows.
const TimelinePage = 200

// maxShown caps the text of one output or argument list on a timeline (the rest is
// in the export).
const maxShown = 4 << 10

// step is one event of a turn's timeline, as the page shows it.
type step struct {
	Seq    int64
	At     time.Time
	Since  string // since the turn started
	Kind   string
	Title  string
	Detail string
	Body   string // arguments, output or response, indented JSON or text
	Cut    int    // bytes of Body not shown
	// Children are what the agent a tool call ran did (the call's nested run), in
	// log order, under the call.
	Children []*step
	// Under names the call a nested run's step belongs to when that call is on
	// another page of the timeline.
	Under string
	path  string
}

// timelinePage shows one turn's activities in log order: model calls (tokens, request
// hash, response), tool calls (arguments, output, duration), policy decisions with
// rule and level, approvals, guardrail verdicts, compactions, skills, handoffs —
// nested agents' activities indented under the call that ran them.
func (s *Server) timelinePage(c echo.Context) error {
	sess, err := s.ownedSession(c)
	if err != nil {
		return err
	}
	turn := c.Param("turn")
	after := int64(0)
	if v := c.QueryParam("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return events.FieldError(events.CodeInvalid, "after", "must be a seq, got %q", v)
		}
	}
	ctx := c.Request().Context()
	t, err := s.cfg.Reader.Turn(ctx, sess.ID, turn)
	if err != nil {
		return err
	}
	evs, err := s.cfg.Reader.Events(ctx, sess.ID, max(after, t.StartSeq-1))
	if err != nil {
		return err
	}
	var page, own []events.Event
	next := int64(0)
	for _, ev := range evs {
		if ev.Turn != turn {
			continue
		}
		own = append(own, ev)
		if next == 0 && len(page) == TimelinePage {
			next = page[len(page)-1].Seq
		}
		if next == 0 {
			page = append(page, ev)
		}
	}
	var files []fileCall
	if after == 0 { // the first page has the turn's files
		if files, err = s.turnFiles(ctx, sess.ID, own); err != nil {
			return err
		}
	}
	ended := t.Status != projection.TurnRunning && t.Status != projection.TurnSuspended
	return s.render(c, http.StatusOK, "timeline", "Turn "+turn, map[string]any{"Session": sess, "Turn": t, "Steps": tree(page, t.StartedAt), "Next": next,
		"Files": files, "Ended": ended})
}

// tree arranges a page of a turn's events as the page shows them: the turn's own
// agent's activities in log order, and under each tool call that ran an agent that
// agent's activities, in their own log order (nested agents run concurrently, so in
// the log their activities interleave).
func tree(evs []events.Event, start time.Time) []*step {
	var top []*step
	byCall := map[string][]*step{}
	var callers []string // in the order their first nested step came
	for _, ev := range evs {
		st := stepOf(ev, start)
		caller := callerOf(ev.Path)
		if caller == "" {
			top = append(top, &st)
			continue
		}
		if _, seen := byCall[caller]; !seen {
			callers = append(callers, caller)
		}
		byCall[caller] = append(byCall[caller], &st)
	}
	var attach func([]*step)
	attach = func(list []*step) {
		for _, st := range list {
			if st.Kind != events.TypeToolScheduled {
				continue
			}
			if kids, ok := byCall[st.path]; ok {
				st.Children = kids
				delete(byCall, st.path)
				attach(kids)
			}
		}
	}
	attach(top)
	for _, caller := range callers { // their call is on an earlier page
		if kids, ok := byCall[caller]; ok {
			delete(byCall, caller)
			attach(kids)
			for _, k := range kids {
				k.Under = caller
			}
			top = append(top, kids...)
		}
	}
	return top
}

// callID is the id of the tool call at path (its last segment).
func callID(path string) string { return path[strings.LastIndex(path, "/")+1:] }

// callerOf is the path of the tool call whose nested agent run an activity at path
// belongs to ("" for the turn's own agent). A path is agent/kind/id, then for each
// nested run agent/kind/id again, then what is attached to the activity (an
// approval, a guardrail): "support/tool/c1/warehouse/model/1" is the warehouse
// agent's model call, run by the call support/tool/c1.
func callerOf(path string) string {
	segs := strings.Split(path, "/")
	caller := ""
	for i := 0; i+4 < len(segs) && segs[i+1] == "tool" && (segs[i+4] == "model" || segs[i+4] == "tool"); i += 3 {
		caller = strings.Join(segs[:i+3], "/")
	}
	return caller
}

func stepOf(ev events.Event, start time.Time) step {
	d := gjson.ParseBytes(ev.Data)
	st := step{Seq: ev.Seq, At: ev.At, Since: "+" + ev.At.Sub(start).Round(time.Millisecond).String(), Kind: ev.Type, path: ev.Path}
	switch ev.Type {
	case events.TypeTurnStarted:
		st.Title, st.Body = "turn started, agent "+d.Get("agent").String(), d.Get("input").String()
	case events.TypeModelCalled:
		st.Title = fmt.Sprintf("model call: %s (agent %s)", d.Get("llm").String(), d.Get("agent").String())
		st.Detail = fmt.Sprintf("%d tokens in, %d out · request %s · %d items", d.Get("usage.input_tokens").Int(), d.Get("usage.output_tokens").Int(),
			d.Get("request_hash").String(), d.Get("parts.items").Int())
		st.Body = d.Get("response.text").String()
		if calls := d.Get("response.tool_calls"); calls.IsArray() && len(calls.Array()) > 0 {
			st.Body = strings.TrimSpace(st.Body + "\n" + indentJSON(json.RawMessage(calls.Raw)))
		}
	case events.TypeToolScheduled:
		st.Title, st.Body = "tool call: "+d.Get("tool").String(), indentJSON(json.RawMessage(d.Get("arguments").Raw))
		st.Detail = "call " + callID(ev.Path)
		if a := d.Get("agent").String(); a != "" {
			st.Detail += " · runs the agent " + a + " (what it did is listed under this call)"
		}
	case events.TypeToolResulted:
		st.Title = "result of " + d.Get("tool").String()
		st.Detail = fmt.Sprintf("call %s · %d ms", callID(ev.Path), d.Get("duration_ms").Int())
		if d.Get("is_error").Bool() {
			st.Detail += " · error " + d.Get("error_kind").String()
		}
		if n := d.Get("note").String(); n != "" {
			st.Detail += " · " + n
		}
		st.Body = d.Get("output").String()
		if json.Valid([]byte(st.Body)) {
			st.Body = indentJSON(json.RawMessage(st.Body))
		}
	case events.TypePolicyDecided:
		st.Title = fmt.Sprintf("policy: %s %s", d.Get("decision").String(), d.Get("tool").String())
		st.Detail = fmt.Sprintf("level %s · rule %s · %s", d.Get("level").String(), d.Get("rule").String(), d.Get("reason").String())
	case events.TypeApprovalRequested, events.TypeReviewRequested:
		st.Title, st.Detail = "asks a person: "+d.Get("kind").String(), d.Get("reason").String()
	case events.TypeApprovalResolved:
		st.Title = fmt.Sprintf("answered by %s: confirmed %v", d.Get("by").String(), d.Get("confirmed").Bool())
		st.Detail = d.Get("rejection_message").String()
		if a := d.Get("arguments"); a.Exists() {
			st.Body = indentJSON(json.RawMessage(a.Raw))
		}
	case events.TypeReviewResolved:
		st.Title, st.Detail = fmt.Sprintf("review by %s: %s", d.Get("by").String(), d.Get("decision").String()), d.Get("reviewer_notes").String()
	case events.TypeBudgetReached:
		st.Title, st.Detail = "held at a budget: "+d.Get("scope").String(), d.Get("reason").String()
	case events.TypeBudgetResolved:
		st.Title = fmt.Sprintf("budget answered by %s: %s", d.Get("by").String(), d.Get("decision").String())
		if x := d.Get("extend"); x.Exists() {
			st.Detail = "extended by " + x.Raw
		}
	case events.TypeGuardrailTripped:
		st.Title, st.Detail = "guardrail tripped: "+d.Get("name").String(), d.Get("stage").String()+": "+d.Get("reason").String()
	case events.TypeTurnFailed:
		st.Title, st.Detail = "turn failed: "+d.Get("error_code").String(), d.Get("message").String()
	case events.TypeTurnRecovered:
		st.Title = fmt.Sprintf("recovered after a crash: attempt %d", d.Get("attempt").Int())
		st.Detail = fmt.Sprintf("%d recorded activities reused", d.Get("replayed").Int())
		for _, part := range []struct{ field, say string }{{"resent", "sent again"}, {"outcome_unknown", "outcome unknown, not run again"}} {
			var paths []string
			for _, p := range d.Get(part.field).Array() {
				paths = append(paths, "call "+callID(p.String()))
			}
			if len(paths) > 0 {
				st.Detail += " · " + part.say + ": " + strings.Join(paths, ", ")
			}
		}
	case events.TypeTurnCommitted:
		st.Title, st.Body = "turn committed, agent "+d.Get("agent").String(), d.Get("output").String()
	default:
		st.Title, st.Body = ev.Type, indentJSON(ev.Data)
	}
	if len(st.Body) > maxShown {
		st.Cut = len(st.Body) - maxShown
		st.Body = st.Body[:maxShown]
	}
	return st
}
