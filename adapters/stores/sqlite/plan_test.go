package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestStepQueriesSeek: every statement a turn step runs finds its rows through an
// index, so its cost does not grow with the session's history or the database's size.
// (Timings are the benchmarks' job; this pins the query plans.)
func TestStepQueriesSeek(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "plan.db"), Options{Synchronous: "OFF"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, q := range map[string]string{
		"qLastSeq": qLastSeq, "qEventsAfter": qEventsAfter, "qSessionMoved": qSessionMoved,
		"qTurnProgress": qTurnProgress, "qTurnClose": qTurnClose, "qTurnPause": qTurnPause,
		"qInterruptSet": qInterruptSet, "qInterruptEnd": qInterruptEnd, "qPending": qPending,
		"qSession": qSession, "qSessionHead": qSessionHead, "qTurn": qTurn, "qLastTurn": qLastTurn, "qTurnEndingAt": qTurnEndingAt,
		"qRunningTurns": qRunningTurns, "qSuspended": qSuspended, "qGrantEvents": qGrantEvents, "qFirstTurn": qFirstTurn,
		"qSpend": qSpend, "qSpendAdd": qSpendAdd, "qBudgetExtend": qBudgetExtend,
	} {
		args := make([]any, max(strings.Count(q, "?"), strings.Count(q, "?2")*2)) // unbound parameters plan as NULLs
		rows, err := s.read.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if name == "qGrantEvents" && !strings.Contains(strings.Join(plan, "; "), "USING INDEX events_grants") {
			t.Errorf("%s does not read the grants' own index: %s", name, strings.Join(plan, "; "))
		}
		for _, step := range plan {
			// Listing open turns walks a partial index that holds only open turns.
			open := step == "SCAN proj_turns USING INDEX proj_turns_running" || step == "SCAN proj_turns USING INDEX proj_turns_suspended"
			if (strings.HasPrefix(step, "SCAN ") && !open) || strings.Contains(step, "TEMP B-TREE") {
				t.Errorf("%s scans or sorts: %s", name, strings.Join(plan, "; "))
			}
		}
	}
}
