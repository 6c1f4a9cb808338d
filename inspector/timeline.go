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
	Depth  int    // how deep in nested agents
	Kind   string
	Title  string
	Detail string
	Body   string // arguments, output or response, indented JSON or text
	Cut    int    // bytes of Body not shown
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
	var steps []step
	next := int64(0)
	for _, ev := range evs {
		if ev.Turn != turn {
			continue
		}
		if len(steps) == TimelinePage {
			next = steps[len(steps)-1].Seq
			break
		}
		steps = append(steps, stepOf(ev, t.StartedAt))
	}
	return s.render(c, http.StatusOK, "timeline", "Turn "+turn, map[string]any{"Session": sess, "Turn": t, "Steps": steps, "Next": next})
}

func stepOf(ev events.Event, start time.Time) step {
	d := gjson.ParseBytes(ev.Data)
	st := step{Seq: ev.Seq, At: ev.At, Since: "+" + ev.At.Sub(start).Round(time.Millisecond).String(), Depth: strings.Count(ev.Path, "/tool/"), Kind: ev.Type}
	if st.Depth > 0 && !strings.Contains(ev.Path[strings.Index(ev.Path, "/tool/")+6:], "/") {
		st.Depth-- // the call itself is the caller's
	}
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
		if a := d.Get("agent").String(); a != "" {
			st.Detail = "runs the agent " + a + " (its activities follow, indented)"
		}
	case events.TypeToolResulted:
		st.Title = "result of " + d.Get("tool").String()
		st.Detail = fmt.Sprintf("%d ms", d.Get("duration_ms").Int())
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
	case events.TypeGuardrailTripped:
		st.Title, st.Detail = "guardrail tripped: "+d.Get("name").String(), d.Get("stage").String()+": "+d.Get("reason").String()
	case events.TypeTurnFailed:
		st.Title, st.Detail = "turn failed: "+d.Get("error_code").String(), d.Get("message").String()
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
