package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/client"
)

func TestApprovalOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	turns := "/v1/sessions/" + id + "/turns"
	interrupt := b.suspendRefund(t, turns, "key-alice")
	r := b.do(t, "GET", "/v1/sessions/"+id+"/interrupts", "key-alice", "")
	if list, _ := r.body["interrupts"].([]any); len(list) != 1 || list[0].(map[string]any)["id"] != interrupt {
		t.Fatalf("interrupts: %s", r.raw)
	}
	if r := b.do(t, "POST", turns, "key-alice", `{"input":"hello"}`); r.status != http.StatusConflict {
		t.Fatalf("a new turn while suspended: %d %s", r.status, r.raw)
	}
	for body, status := range map[string]int{
		`{"resume_map":{}}`:                                                                    400,
		`{"resume_map":{"int_x":{"confirmed":true}}}`:                                          400,
		`{"resume_map":{"` + interrupt + `":{"confirmed":"yes"}}}`:                             400,
		`{"resume_map":{"` + interrupt + `":{"ok":true}}}`:                                     400,
		`{"resume_map":{"` + interrupt + `":{"confirmed":true,"arguments":{"order_id":"x"}}}}`: 400,
	} {
		if r := b.do(t, "POST", turns, "key-alice", body); r.status != status {
			t.Fatalf("%s: %d %s, want %d", body, r.status, r.raw, status)
		}
	}
	approve := `{"resume_map":{"` + interrupt + `":{"confirmed":true}}}`
	if res, err := b.as("key-alice").RunTurn(context.Background(), id, client.TurnRequest{ResumeMap: map[string]client.Answer{interrupt: client.Approve()}}); err != nil ||
		res.Status != "completed" || res.Output != "Refunded 58.40 EUR for order 42." {
		t.Fatalf("approve: %+v %v", res, err)
	}
	if r := b.do(t, "POST", turns, "key-alice", approve); r.status != 200 || r.body["status"] != "completed" {
		t.Fatalf("the same answer again: %d %s", r.status, r.raw)
	}
	if r := b.do(t, "POST", turns, "key-alice", `{"resume_map":{"`+interrupt+`":{"confirmed":false}}}`); r.status != 409 {
		t.Fatalf("a different answer: %d %s", r.status, r.raw)
	}
	if r := b.do(t, "GET", "/v1/sessions/"+id+"/interrupts", "key-alice", ""); !strings.Contains(r.raw, `"interrupts":[]`) {
		t.Fatalf("interrupts after resume: %s", r.raw)
	}

	// Rejected, streamed: the suspension ends the first stream; the resumed stream
	// carries only what came after it.
	id2 := b.newSession(t, "key-alice", "demo")
	var names []string
	for ev := range b.stream(t, context.Background(), "POST", "/v1/sessions/"+id2+"/turns", `{"input":"refund order 7","stream":true}`, nil) {
		names = append(names, ev.name)
		if ev.name == "interrupt" {
			interrupt = ev.data[strings.Index(ev.data, `"id":"`)+6:][:24]
		}
	}
	if got := strings.Join(names, ","); got != "turn_started,interrupt,turn_suspended" {
		t.Fatalf("suspending stream = %s", got)
	}
	names = nil
	var text string
	for ev := range b.stream(t, context.Background(), "POST", "/v1/sessions/"+id2+"/turns",
		`{"resume_map":{"`+interrupt+`":{"confirmed":false,"rejection_message":"needs a manager"}},"stream":true}`, nil) {
		if ev.id == 0 {
			text += ev.data
			continue
		}
		names = append(names, ev.name)
	}
	if got := strings.Join(names, ","); got != "tool_result,turn_committed" {
		t.Fatalf("resumed stream = %s", got)
	}
	if !strings.Contains(text, "needs") || !strings.Contains(text, "manager") {
		t.Fatalf("live text = %s", text)
	}
}

// TestEditedApprovalOverHTTP: a reviewer edits the arguments; the call runs with
// the edit, the history shows it as it ran with the proposal and the reviewer beside
// it, and the audit row says edited.
func TestEditedApprovalOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	turns := "/v1/sessions/" + id + "/turns"
	interrupt := b.suspendRefund(t, turns, "key-alice")
	res, err := b.as("key-alice").RunTurn(context.Background(), id, client.TurnRequest{ResumeMap: map[string]client.Answer{interrupt: client.Edit(json.RawMessage(`{"order_id":7}`))}})
	if err != nil || res.Status != "completed" || res.Output != "Refunded 12.00 EUR for order 7." {
		t.Fatalf("edit: %+v %v", res, err)
	}
	r := b.do(t, "GET", "/v1/sessions/"+id+"/history", "key-alice", "")
	if !strings.Contains(r.raw, `"arguments":{"order_id":7},"call_id":"call_1_1","edited_by":"alice","name":"issue_refund","proposed_arguments":{"order_id":42}`) {
		t.Fatalf("history: %s", r.raw)
	}
	if !strings.Contains(r.raw, `A reviewer changed the arguments of this call before it ran. You proposed {\"order_id\":42}; it ran with {\"order_id\":7}.`) {
		t.Fatalf("the output the model received says nothing of the edit: %s", r.raw)
	}
	r = b.do(t, "GET", "/v1/sessions/"+id+"/audit", "key-alice", "")
	if !strings.Contains(r.raw, `"outcome":"edited"`) || !strings.Contains(r.raw, `"by":"alice"`) {
		t.Fatalf("audit: %s", r.raw)
	}
}

// suspendRefund asks the demo app to refund order 42: the turn suspends for approval.
// It returns the interrupt to answer.
func (b testBundle) suspendRefund(t *testing.T, turns, key string) string {
	t.Helper()
	session := strings.TrimSuffix(strings.TrimPrefix(turns, "/v1/sessions/"), "/turns")
	r, err := b.as(key).RunTurn(context.Background(), session, client.TurnRequest{Input: "refund order 42"})
	if err != nil || r.Status != "suspended" || r.SuspendPayload == nil || r.SuspendPayload.Tool != "issue_refund" || len(r.Interrupts) != 1 {
		t.Fatalf("suspend: %+v %v", r, err)
	}
	return r.SuspendPayload.ID
}

// TestFollowingAResumedTurn: the stream of a turn that suspended and was resumed
// goes past the suspension to how the turn ended.
func TestFollowingAResumedTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := context.Background(), b.as("key-alice")
	id := b.newSession(t, "key-alice", "demo")
	interrupt := b.suspendRefund(t, "/v1/sessions/"+id+"/turns", "key-alice")
	res, err := c.RunTurn(ctx, id, client.TurnRequest{ResumeMap: map[string]client.Answer{interrupt: client.Approve()}})
	if err != nil || res.Status != "completed" {
		t.Fatalf("resume: %+v %v", res, err)
	}
	st, err := c.FollowTurn(ctx, id, res.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var names []string
	for ev, err := st.Next(); err == nil; ev, err = st.Next() {
		names = append(names, ev.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "turn_suspended,") || !strings.HasSuffix(got, ",turn_committed") {
		t.Fatalf("the stream of a resumed turn: %s", got)
	}
}
