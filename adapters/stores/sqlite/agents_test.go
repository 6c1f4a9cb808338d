package sqlite_test

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
)

// TestTurnsAndHistoryNameTheAgents: a turn handed from triage to billing lists both
// in the turns view, and the history view labels each tool output with the agent
// whose call it answers.
func TestTurnsAndHistoryNameTheAgents(t *testing.T) {
	t.Parallel()
	b := setup(t, sqlite.Options{})
	createSession(t, b, "s1")
	items := []events.Item{events.UserMessage("my invoice"),
		{Type: events.ItemFunctionCall, CallID: "h1", Name: "transfer_to_billing", Arguments: []byte(`{}`), Agent: "triage"},
		{Type: events.ItemFunctionCallOutput, CallID: "h1", Output: `{"assistant":"billing"}`},
		{Type: events.ItemFunctionCall, CallID: "c1", Name: "lookup", Arguments: []byte(`{}`), Agent: "billing"},
		{Type: events.ItemFunctionCallOutput, CallID: "c1", Output: `{}`},
		events.AssistantMessage("billing", "paid")}
	evs := []events.Event{
		events.MustNew("t1", "", &events.TurnStarted{Input: "my invoice", Agent: "triage"}),
		events.MustNew("t1", "triage/handoff/h1", &events.HandoffOccurred{From: "triage", To: "billing", CallID: "h1", Tool: "transfer_to_billing"}),
		events.MustNew("t1", "", &events.TurnCommitted{Items: items, Agent: "billing", Output: "paid"}),
	}
	if _, err := b.store.Append(b.ctx, "s1", 1, evs); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+b.path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var agents string
	if err := db.QueryRow(`SELECT agents FROM turns WHERE turn_id = 't1'`).Scan(&agents); err != nil || agents != `["triage","billing"]` {
		t.Fatalf("turns.agents = %q, %v", agents, err)
	}
	rows, err := db.Query(`SELECT type, coalesce(agent, '') FROM history WHERE session_id = 's1'`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var typ, agent string
		rows.Scan(&typ, &agent)
		got = append(got, typ+":"+agent)
	}
	rows.Close()
	want := "message: function_call:triage function_call_output:triage function_call:billing function_call_output:billing message:billing"
	if strings.Join(got, " ") != want {
		t.Fatalf("history = %s\nwant      %s", strings.Join(got, " "), want)
	}
	if turn, err := b.store.Turn(b.ctx, "s1", "t1"); err != nil || strings.Join(turn.Agents, ",") != "triage,billing" {
		t.Fatalf("Turn().Agents = %v, %v", turn.Agents, err)
	}
}
