package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/client"
)

func TestEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, b.newSession(t, "key-alice", "demo"))
	}
	b.newSession(t, "key-bob", "demo")

	ctx, c := context.Background(), b.as("key-alice")
	// Sessions: newest first, paged, the caller's only.
	page, err := c.ListSessions(ctx, "demo", 2, "")
	if err != nil || len(page.Sessions) != 2 || page.Sessions[0].ID != ids[2] || page.NextCursor == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	if page, err = c.ListSessions(ctx, "", 2, page.NextCursor); err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != ids[0] || page.NextCursor != "" {
		t.Fatalf("second page: %+v %v", page, err)
	}
	for _, bad := range []string{"limit=0", "limit=101", "limit=x", "cursor=zzz"} {
		if r := b.do(t, "GET", "/v1/sessions?"+bad, "key-alice", ""); r.status != 400 {
			t.Fatalf("%s: %d %s", bad, r.status, r.raw)
		}
	}

	id := ids[0]
	turn, err := c.RunTurn(ctx, id, client.TurnRequest{Input: "where is order 42?"})
	if err != nil {
		t.Fatal(err)
	}
	turnID := turn.TurnID
	if sum, err := c.Session(ctx, id); err != nil || sum.Status != "idle" || sum.TurnCount != 1 || sum.ActiveAgent != "support" || sum.Parent != nil {
		t.Fatalf("summary: %+v %v", sum, err)
	}
	if turns, err := c.Turns(ctx, id); err != nil || len(turns) != 1 || turns[0].Status != "completed" || turns[0].ToolCalls != 1 {
		t.Fatalf("turns: %+v %v", turns, err)
	}
	if r := b.do(t, "GET", "/v1/sessions/"+id+"/interrupts", "key-alice", ""); r.status != 200 || !strings.Contains(r.raw, `"interrupts":[]`) {
		t.Fatalf("interrupts: %s", r.raw)
	}
	r := b.do(t, "POST", "/v1/sessions/"+id+"/turns/"+turnID+"/cancel", "key-alice", "")
	if r.status != 409 {
		t.Fatalf("cancel of a committed turn: %d %s", r.status, r.raw)
	}
	if r := b.do(t, "POST", "/v1/sessions/"+id+"/turns/nope/cancel", "key-alice", ""); r.status != 404 {
		t.Fatalf("cancel of an unknown turn: %d %s", r.status, r.raw)
	}

	// Branch at the turn; the branch-points list it; the summary names the parent.
	br, err := c.Branch(ctx, id, client.BranchRequest{AtTurn: turnID})
	if err != nil || br.ParentID != id {
		t.Fatalf("branch: %+v %v", br, err)
	}
	branch := br.ID
	points, err := c.BranchPoints(ctx, id)
	if err != nil || len(points.BranchPoints) != 1 || strings.Join(points.BranchPoints[0].Branches, ",") != branch {
		t.Fatalf("branch points: %+v %v", points, err)
	}
	seq := int(points.BranchPoints[0].Seq)
	if _, err := c.Branch(ctx, id, client.BranchRequest{AtSeq: int64(seq)}); err != nil {
		t.Fatalf("branch at seq: %v", err)
	}
	for body, status := range map[string]int{`{"at_seq":2}`: 400, `{}`: 400, `{"at_turn":"nope"}`: 404, `{"at_seq":-1}`: 400,
		`{"at_turn":"` + turnID + `","files":"copy"}`: 400, `{"at_turn":"` + turnID + `","files":"restore"}`: 400} { // the app has no workspace
		if r := b.do(t, "POST", "/v1/sessions/"+id+"/branches", "key-alice", body); r.status != status {
			t.Fatalf("branch %s: %d %s, want %d", body, r.status, r.raw, status)
		}
	}
	if r := b.do(t, "POST", "/v1/sessions/"+id+"/branches", "key-bob", `{"at_turn":"`+turnID+`"}`); r.status != 404 {
		t.Fatalf("another user's branch: %d", r.status)
	}
	if sum, err := c.Session(ctx, branch); err != nil || sum.Parent == nil || sum.Parent.SessionID != id || sum.Parent.TurnID != turnID {
		t.Fatalf("branch summary: %+v %v", sum, err)
	}
	if res, err := c.RunTurn(ctx, branch, client.TurnRequest{Input: "and order 7?"}); err != nil || !strings.Contains(res.Output, "Order 7") {
		t.Fatalf("branch turn: %+v %v", res, err)
	}
	if items, err := c.History(ctx, branch); err != nil || len(items) != 8 {
		t.Fatalf("branch history has %d items: %v", len(items), err)
	}

	// Export is the fixture format.
	nd, err := c.Export(ctx, id)
	if lines := strings.Count(string(nd), "\n"); err != nil || lines != 7 {
		t.Fatalf("export: %d lines, %v", lines, err)
	}
	if r := b.do(t, "GET", "/v1/sessions/"+id+"/export", "key-alice", ""); r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %s", r.header.Get("Content-Type"))
	}
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	id         int64
	name, data string
}

// readSSE parses events from body and sends them until it ends.
func readSSE(body *bufio.Reader, out chan<- sseEvent) {
	defer close(out)
	var ev sseEvent
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		case line == "":
			out <- ev
			ev = sseEvent{}
		}
	}
}

func (b testBundle) stream(t *testing.T, ctx context.Context, method, path, body string, header map[string]string) <-chan sseEvent {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer key-alice")
	req.Header.Set("Accept", "text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream %s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent)
	go func() {
		defer res.Body.Close()
		readSSE(bufio.NewReader(res.Body), out)
	}()
	return out
}

func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("stream ended early")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
	}
	return sseEvent{}
}

func TestStreamTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	ch := b.stream(t, context.Background(), "POST", "/v1/sessions/"+id+"/turns", `{"input":"can I get a refund for order 1001?","stream":true}`, nil)
	var names []string
	var last int64
	live := ""
	for ev := range ch {
		if ev.id == 0 { // a live text delta: not in the log, so no id
			if ev.name != "text_delta" || !strings.Contains(ev.data, `"live":true`) {
				t.Fatalf("an event without an id: %+v", ev)
			}
			var d struct{ Text string }
			json.Unmarshal([]byte(ev.data), &d)
			live += d.Text
			continue
		}
		if ev.id <= last {
			t.Fatalf("ids not increasing: %d after %d", ev.id, last)
		}
		last = ev.id
		names = append(names, ev.name)
		if ev.name == "turn_committed" {
			if !strings.Contains(ev.data, "Refundable: true") {
				t.Fatalf("turn_committed data: %s", ev.data)
			}
			var d struct{ Output string }
			json.Unmarshal([]byte(ev.data), &d)
			if live != d.Output {
				t.Fatalf("live text %q, answer %q", live, d.Output)
			}
		}
	}
	// The answer went out live, so the log's text_delta is not sent again.
	if got, want := strings.Join(names, ","), "turn_started,tool_call,tool_call,tool_result,tool_result,turn_committed"; got != want {
		t.Fatalf("stream = %s, want %s", got, want)
	}
}

// TestReconnectWithLastEventID cuts a turn's stream mid-turn and follows the rest on
// /events with Last-Event-ID: every event arrives exactly once, in order.
func TestReconnectWithLastEventID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "gate")
	ctx, cut := context.WithCancel(context.Background())
	first := b.stream(t, ctx, "POST", "/v1/sessions/"+id+"/turns", `{"input":"go","stream":true}`, nil)
	var got []int64
	for {
		ev := next(t, first)
		got = append(got, ev.id)
		if ev.name == "tool_call" {
			break
		}
	}
	<-b.entered // the turn is held inside its tool
	cut()       // the client goes away mid-turn
	for range first {
	}
	ctx2, stop := context.WithCancel(context.Background())
	defer stop() // a follow stream never ends by itself
	second := b.stream(t, ctx2, "GET", "/v1/sessions/"+id+"/events", "",
		map[string]string{"Last-Event-ID": strconv.FormatInt(got[len(got)-1], 10)})
	close(b.release)
	var afterCut []int64
	for {
		ev := next(t, second)
		got = append(got, ev.id)
		afterCut = append(afterCut, ev.id)
		if ev.name == "TurnCommitted" {
			break
		}
	}
	// No event twice, none out of order, and after the cut every event of the log.
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("received seqs %v: a duplicate or out of order", got)
		}
	}
	cutAt := got[len(got)-len(afterCut)-1]
	r := b.do(t, "GET", "/v1/sessions/"+id+"/events?after="+strconv.FormatInt(cutAt, 10), "key-alice", "")
	all, _ := r.body["events"].([]any)
	if len(all) != len(afterCut) {
		t.Fatalf("after the cut at seq %d received %v, the log has %d events", cutAt, afterCut, len(all))
	}
	for i, ev := range all {
		if seq := int64(ev.(map[string]any)["seq"].(float64)); afterCut[i] != seq {
			t.Fatalf("after the cut received %v, want every seq of the log once, in order", afterCut)
		}
	}
}

// TestStopEndsLiveStreams checks that stopping the API (as serve does before its HTTP
// shutdown) ends follow streams, which would otherwise hold the shutdown forever.
func TestStopEndsLiveStreams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	ch := b.stream(t, context.Background(), "GET", "/v1/sessions/"+id+"/events", "", nil)
	if ev := next(t, ch); ev.name != "SessionCreated" {
		t.Fatalf("first event %+v", ev)
	}
	b.api.Stop()
	select {
	case _, open := <-ch:
		if open {
			t.Fatal("an event after Stop")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end after Stop")
	}
}
