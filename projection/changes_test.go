package projection_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

func TestChangesFoldEvents(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := func(seq int64, p events.Payload) events.Event { // as read back: no payload attached
		ev := events.MustNew("t1", "", p)
		return events.Event{Session: "s", Seq: seq, Turn: ev.Turn, Type: ev.Type, V: ev.V, Data: ev.Data, At: at}
	}
	items := []events.Item{events.UserMessage("hi"), events.AssistantMessage("a", "hello")}
	cases := []struct {
		ev   events.Event
		want string
	}{
		{stored(1, &events.SessionCreated{App: "demo", Owner: "o", Agent: "a"}), "SessionOpened"},
		{stored(2, &events.TurnStarted{Input: "hi", Agent: "a"}), "TurnOpened"},
		{stored(3, &events.ModelCalled{Usage: events.Usage{InputTokens: 7, OutputTokens: 2}}), "TurnProgressed{ModelCalls:1 ToolCalls:0 Usage:{InputTokens:7 OutputTokens:2}}"},
		{stored(4, &events.ToolResulted{CallID: "c", Tool: "x"}), "TurnProgressed{ModelCalls:0 ToolCalls:1"},
		{stored(5, &events.ToolScheduled{CallID: "c", Tool: "x"}), ""},
		{stored(6, &events.TurnCommitted{Items: items, Agent: "a", Output: "hello"}), `HistoryAppended Items:["{\"content\":\"hi\",\"role\":\"user\",\"type\":\"message\"}"`},
		{stored(7, &events.TurnFailed{ErrorCode: events.CodeMaxTurns, Message: "m"}), "Status:failed"},
	}
	for _, tc := range cases {
		changes, err := projection.Changes(tc.ev)
		if err != nil {
			t.Fatalf("%s: %v", tc.ev.Type, err)
		}
		got := describe(changes)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Fatalf("%s: changes %s, want %s", tc.ev.Type, got, tc.want)
		}
	}
}

func describe(changes []projection.Change) string {
	var b strings.Builder
	for _, c := range changes {
		switch c := c.(type) {
		case projection.SessionOpened:
			b.WriteString("SessionOpened ")
		case projection.TurnOpened:
			b.WriteString("TurnOpened ")
		case projection.TurnProgressed:
			b.WriteString("TurnProgressed{ModelCalls:" + strconv.Itoa(c.ModelCalls) + " ToolCalls:" + strconv.Itoa(c.ToolCalls) +
				" Usage:{InputTokens:" + strconv.Itoa(int(c.Usage.InputTokens)) + " OutputTokens:" + strconv.Itoa(int(c.Usage.OutputTokens)) + "}} ")
		case projection.TurnClosed:
			b.WriteString("TurnClosed Status:" + string(c.Status) + " ")
		case projection.HistoryAppended:
			b.WriteString("HistoryAppended Items:[")
			for i, it := range c.Items {
				if i > 0 {
					b.WriteString(",")
				}
				b.WriteString(`"` + strings.ReplaceAll(string(it), `"`, `\"`) + `"`)
			}
			b.WriteString("] ")
		}
	}
	return strings.TrimSpace(b.String())
}

func TestUnknownEventIsCorruptNotPanic(t *testing.T) {
	t.Parallel()
	for _, ev := range []events.Event{
		{Session: "s", Seq: 9, Type: "TurnTeleported", V: 1, Data: []byte(`{}`)},
		{Session: "s", Seq: 9, Type: events.TypeModelCalled, V: 99, Data: []byte(`{}`)},
		{Session: "s", Seq: 9, Type: events.TypeTurnStarted, V: 1, Data: []byte(`{"input":1}`)},
	} {
		if _, err := projection.Changes(ev); !events.IsCode(err, events.CodeCorruptLog) || !strings.Contains(err.Error(), "seq 9") {
			t.Fatalf("%s v%d: err = %v, want corrupt_log naming seq 9", ev.Type, ev.V, err)
		}
	}
}
