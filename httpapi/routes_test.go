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
)

func TestEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, b.newSession(t, "key-alice", "demo"))
	}
	b.newSession(t, "key-bob", "demo")

	// Sessions: newest first, paged, the caller's only.
	r := b.do(t, "GET", "/v1/sessions?limit=2&app=demo", "key-alice", "")
	page, _ := r.body["sessions"].([]any)
	if r.status != 200 || len(page) != 2 || page[0].(map[string]any)["id"] != ids[2] || r.body["next_cursor"] == nil {
		t.Fatalf("first page: %d %s", r.status, r.raw)
	}
	r = b.do(t, "GET", "/v1/sessions?limit=2&cursor="+r.body["next_cursor"].(string), "key-alice", "")
	if page, _ := r.body["sessions"].([]any); len(page) != 1 || page[0].(map[string]any)["id"] != ids[0] || r.body["next_cursor"] != nil {
		t.Fatalf("second page: %s", r.raw)
	}
	for _, bad := range []string{"limit=0", "limit=101", "limit=x", "cursor=zzz"} {
		if r := b.do(t, "GET", "/v1/sessions?"+bad, "key-alice", ""); r.status != 400 {
			t.Fatalf("%s: %d %s", bad, r.status, r.raw)
		}
	}

	id := ids[0]
	turn := b.do(t, "POST", "/v1/sessions/"+id+"/turns", "key-alice", `{"input":"where is order 42?"}`)
	turnID := turn.body["turn_id"].(string)
	r = b.do(t, "GET", "/v1/sessions/"+id, "key-alice", "")
	if r.status != 200 || r.body["status"] != "idle" || r.body["turn_count"].(float64) != 1 || r.body["active_agent"] != "support" || r.body["parent"] != nil {
		t.Fatalf("summary: %s", r.raw)
	}
	r = b.do(t, "GET", "/v1/sessions/"+id+"/turns", "key-alice", "")
	if turns, _ := r.body["turns"].([]any); len(turns) != 1 || turns[0].(map[string]any)["status"] != "committed" ||
		turns[0].(map[string]any)["tool_calls"].(float64) != 1 {
		t.Fatalf("turns: %s", r.raw)
	}
	r = b.do(t, "GET", "/v1/sessions/"+id+"/interrupts", "key-alice", "")
	if r.status != 200 || !strings.Contains(r.raw, `"interrupts":[]`) {
		t.Fatalf("interrupts: %s", r.raw)
	}
	r = b.do(t, "POST", "/v1/sessions/"+id+"/turns/"+turnID+"/cancel", "key-alice", "")
	if r.status != 409 {
		t.Fatalf("cancel of a committed turn: %d %s", r.status, r.raw)
	}
	if r := b.do(t, "POST", "/v1/sessions/"+id+"/turns/nope/cancel", "key-alice", ""); r.status != 404 {
		t.Fatalf("cancel of an unknown turn: %d %s", r.status, r.raw)
	}

	// Branch at the turn; the branch-points list it; the summary names the parent.
	r = b.do(t, "POST", "/v1/sessions/"+id+"/branches", "key-alice", `{"at_turn":"`+turnID+`"}`)
	if r.status != 201 || r.body["parent_id"] != id {
		t.Fatalf("branch: %d %s", r.status, r.raw)
	}
	branch := r.body["id"].(string)
	r = b.do(t, "GET", "/v1/sessions/"+id+"/branch-points", "key-alice", "")
	points, _ := r.body["branch_points"].([]any)
	if len(points) != 1 || !strings.Contains(r.raw, `"branches":["`+branch+`"]`) {
		t.Fatalf("branch points: %s", r.raw)
	}
	seq := int(points[0].(map[string]any)["seq"].(float64))
	if r := b.do(t, "POST", "/v1/sessions/"+id+"/branches", "key-alice", `{"at_seq":`+strconv.Itoa(seq)+`}`); r.status != 201 {
		t.Fatalf("branch at seq: %d %s", r.status, r.raw)
	}
	for body, status := range map[string]int{`{"at_seq":2}`: 409, `{}`: 400, `{"at_turn":"nope"}`: 404, `{"at_seq":-1}`: 400} {
		if r := b.do(t, "POST", "/v1/sessions/"+id+"/branches", "key-alice", body); r.status != status {
			t.Fatalf("branch %s: %d %s, want %d", body, r.status, r.raw, status)
		}
	}
	if r := b.do(t, "POST", "/v1/sessions/"+id+"/branches", "key-bob", `{"at_turn":"`+turnID+`"}`); r.status != 404 {
		t.Fatalf("another user's branch: %d", r.status)
	}
	r = b.do(t, "GET", "/v1/sessions/"+branch, "key-alice", "")
	if parent, _ := r.body["parent"].(map[string]any); parent["session_id"] != id || parent["turn_id"] != turnID {
		t.Fatalf("branch summary: %s", r.raw)
	}
	r = b.do(t, "POST", "/v1/sessions/"+branch+"/turns", "key-alice", `{"input":"and order 7?"}`)
	if r.status != 200 || !strings.Contains(r.raw, "Order 7") {
		t.Fatalf("branch turn: %s", r.raw)
	}
	r = b.do(t, "GET", "/v1/sessions/"+branch+"/history", "key-alice", "")
	if items, _ := r.body["items"].([]any); len(items) != 8 {
		t.Fatalf("branch history has %d items: %s", len(items), r.raw)
	}

	// Export is the fixture format.
	res, err := http.NewRequest("GET", b.srv.URL+"/v1/sessions/"+id+"/export", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Header.Set("Authorization", "Bearer key-alice")
	resp, err := http.DefaultClient.Do(res)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	lines := 0
	for sc.Scan() {
		lines++
	}
	if resp.Header.Get("Content-Type") != "application/x-ndjson" || lines != 7 {
		t.Fatalf("export: %s, %d lines", resp.Header.Get("Content-Type"), lines)
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
