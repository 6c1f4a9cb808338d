package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestSubagentStream: the demo's support agent asks its warehouse agent about two
// orders at once. Each nested run is framed by subagent_start and subagent_end naming
// the tool and the call id, and its text arrives between them.
func TestSubagentStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "demo")
	opened, closed := map[string]bool{}, map[string]bool{}
	nestedText := map[string]string{}
	var order []string
	for ev := range b.stream(t, context.Background(), "POST", "/v1/sessions/"+id+"/turns",
		`{"input":"check the parcels of orders 42 and 7","stream":true}`, nil) {
		var d struct {
			Tool   string `json:"tool"`
			CallID string `json:"call_id"`
			Agent  string `json:"agent"`
			Path   string `json:"path"`
			Text   string `json:"text"`
			Output string `json:"output"`
		}
		json.Unmarshal([]byte(ev.data), &d)
		switch ev.name {
		case "subagent_start":
			if d.Tool != "ask_warehouse" || d.CallID == "" || d.Agent != "warehouse" || opened[d.CallID] {
				t.Fatalf("subagent_start: %s", ev.data)
			}
			opened[d.CallID] = true
			order = append(order, "start:"+d.CallID)
		case "subagent_end":
			if d.Tool != "ask_warehouse" || !opened[d.CallID] || nestedText[d.CallID] == "" || !strings.HasPrefix(d.Output, "order ") {
				t.Fatalf("subagent_end before its start or its text: %s (text so far %q)", ev.data, nestedText[d.CallID])
			}
			closed[d.CallID] = true
			order = append(order, "end:"+d.CallID)
		case "text_delta":
			if call, nested := strings.CutPrefix(d.Path, "support/tool/"); nested {
				call = call[:strings.Index(call, "/")]
				if !opened[call] || closed[call] {
					t.Fatalf("nested text outside its frame: %s", ev.data)
				}
				nestedText[call] += d.Text
			}
		case "tool_call", "tool_result":
			if strings.Contains(ev.data, "ask_warehouse") {
				t.Fatalf("an agent tool shown as a plain tool: %s %s", ev.name, ev.data)
			}
		}
	}
	if len(opened) != 2 || len(closed) != 2 {
		t.Fatalf("frames: %v", order)
	}
}

// TestNestedApprovalStream: a refund inside the researcher agent suspends the turn;
// the interrupt names the nested path; the resumed stream opens with the nested
// agent's subagent_start again, repeats none of its earlier text, and no model is
// asked again what it already answered.
func TestNestedApprovalStream(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.newSession(t, "key-alice", "nested")
	turns := "/v1/sessions/" + id + "/turns"
	var first []string
	interrupt := ""
	for ev := range b.stream(t, context.Background(), "POST", turns, `{"input":"refund 7 please","stream":true}`, nil) {
		first = append(first, ev.name)
		if ev.name == "interrupt" {
			var d struct{ ID, Path string }
			json.Unmarshal([]byte(ev.data), &d)
			if d.Path != "lead/tool/r1/researcher/tool/n1/approval" {
				t.Fatalf("interrupt: %s", ev.data)
			}
			interrupt = d.ID
		}
	}
	if got := strings.Join(first, ","); got != "turn_started,subagent_start,text_delta,interrupt,turn_suspended" {
		t.Fatalf("first stream: %s", got)
	}
	var second []string
	for ev := range b.stream(t, context.Background(), "POST", turns, `{"resume_map":{"`+interrupt+`":{"confirmed":true}},"stream":true}`, nil) {
		second = append(second, ev.name)
		if strings.Contains(ev.data, "checking the refund") {
			t.Fatalf("the resumed stream repeats text: %s %s", ev.name, ev.data)
		}
		if len(second) == 1 && (ev.name != "subagent_start" || !strings.Contains(ev.data, `"reopened":true`) || !strings.Contains(ev.data, `"call_id":"r1"`)) {
			t.Fatalf("the resumed stream does not reopen the nested agent first: %s %s", ev.name, ev.data)
		}
	}
	want := "subagent_start,tool_call,tool_result,text_delta,subagent_end,text_delta,turn_committed"
	if got := strings.Join(second, ","); got != want {
		t.Fatalf("resumed stream: %s\nwant %s", got, want)
	}
	if n := b.researcherCalls.Load(); n != 2 {
		t.Fatalf("the researcher's model was called %d times (want 2: its first answer is replayed)", n)
	}
}
