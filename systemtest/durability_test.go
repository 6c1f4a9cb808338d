package systemtest

import (
	"strings"
	"testing"
)

func TestCrashAfterToolScheduledNonIdempotentFailsUnknown(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	b.committedFirstTurn(t)
	b.gate(t, "counted_write", true)
	b.crashAt(t, "write it", func() bool { return len(b.count("counted_write")) == 1 })
	if evs := b.eventTypes(t); !contains(evs, "ToolScheduled:worker/tool/call_3_1") || contains(evs, "ToolResulted:worker/tool/call_3_1") {
		t.Fatalf("kill point: log = %v", evs)
	}
	b.gate(t, "counted_write", false)
	out := b.restart(t)
	if !strings.Contains(out, "tool_outcome_unknown") {
		t.Fatalf("restart output: %s", out)
	}
	if got := len(b.count("counted_write")); got != 1 {
		t.Fatalf("non-idempotent tool ran %d times, want 1", got)
	}
	history := b.after(t, "failed", "tool_outcome_unknown")
	b.recovered(t, `attempt 2: replayed 1; outcome unknown ["worker/tool/call_3_1"]`)
	if len(history) != 2 {
		t.Fatalf("the failed turn committed items: %v", history)
	}
}

func TestCrashAfterToolScheduledIdempotentReruns(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	b.committedFirstTurn(t)
	b.gate(t, "counted_read", true)
	b.crashAt(t, "read it", func() bool { return len(b.count("counted_read")) == 1 })
	b.gate(t, "counted_read", false)
	out := b.restart(t)
	if !strings.Contains(out, "completed: read done") {
		t.Fatalf("restart output: %s", out)
	}
	if got := len(b.count("counted_read")); got != 2 {
		t.Fatalf("idempotent tool ran %d times, want 2 (once cut, once re-run)", got)
	}
	// turn one: one call with 1 item; turn two: model/1 (3 items) is durable and not
	// repeated; model/2 (5 items) runs after the restart.
	if models := b.count("model"); strings.Join(models, ",") != "1,3,5" {
		t.Fatalf("model calls (items per request) = %v, want 1,3,5", models)
	}
	b.after(t, "completed", "")
	b.recovered(t, `attempt 2: replayed 1; resent ["worker/tool/call_3_1"]`)
}

func TestCrashAfterToolResultedNeverRerunsTool(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	b.committedFirstTurn(t)
	b.gate(t, "model-3", true) // the model call that would follow the tool result
	b.crashAt(t, "write it", func() bool {
		return len(b.count("model")) == 3 && contains(b.eventTypes(t), "ToolResulted:worker/tool/call_3_1")
	})
	if evs := b.eventTypes(t); contains(evs, "ModelCalled:worker/model/2") {
		t.Fatalf("kill point: the next model call is already durable: %v", evs)
	}
	b.gate(t, "model-3", false)
	out := b.restart(t)
	if !strings.Contains(out, "completed: write done") {
		t.Fatalf("restart output: %s", out)
	}
	if got := len(b.count("counted_write")); got != 1 {
		t.Fatalf("tool with a durable result ran %d times, want 1", got)
	}
	// 1: turn one; 3: model/1 of turn two (durable, never repeated); 5, 5: model/2 cut
	// before it was recorded, then made again after the restart.
	if models := b.count("model"); strings.Join(models, ",") != "1,3,5,5" {
		t.Fatalf("model calls (items per request) = %v, want 1,3,5,5", models)
	}
	b.after(t, "completed", "")
	b.recovered(t, `attempt 2: replayed 2`)
}

func TestCrashAfterNextModelCalledDoesNotRepeatIt(t *testing.T) {
	t.Parallel()
	b := setupCrash(t)
	b.committedFirstTurn(t)
	b.gate(t, "counted_read", true) // the tool the second model call schedules
	b.crashAt(t, "chain write then read", func() bool { return len(b.count("counted_read")) == 1 })
	if evs := b.eventTypes(t); !contains(evs, "ModelCalled:worker/model/2") {
		t.Fatalf("kill point: model/2 not durable: %v", evs)
	}
	b.gate(t, "counted_read", false)
	out := b.restart(t)
	if !strings.Contains(out, "completed: read done") {
		t.Fatalf("restart output: %s", out)
	}
	if got := len(b.count("counted_write")); got != 1 {
		t.Fatalf("counted_write ran %d times, want 1", got)
	}
	// model/1 (3 items) and model/2 (5 items) were durable: neither is repeated;
	// model/3 (7 items) runs after the restart.
	if models := b.count("model"); strings.Join(models, ",") != "1,3,5,7" {
		t.Fatalf("model calls (items per request) = %v, want 1,3,5,7", models)
	}
	b.after(t, "completed", "")
	b.recovered(t, `attempt 2: replayed 3; resent ["worker/tool/call_5_1"]`)
}

// recovered checks the audit's account of the crashed turn's recovery.
func (b crashBundle) recovered(t *testing.T, want ...string) {
	t.Helper()
	if got := b.recoveries(t); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the recoveries in the audit:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
