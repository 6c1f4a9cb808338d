package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
)

// RecoveryStore is what CheckRecoveriesAudit needs of a store.
type RecoveryStore interface {
	AuditReader
	Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error)
}

// CheckRecoveriesAudit checks that the audit lists each recovery of a turn: the
// attempt, what was resent, what has an unknown outcome, how much was replayed.
func CheckRecoveriesAudit(t *testing.T, s RecoveryStore, session string) {
	t.Helper()
	ctx := context.Background()
	evs := []events.Event{
		events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main"}),
		events.MustNew("t1", "", &events.TurnStarted{Input: "go", Agent: "main"}),
		events.MustNew("t1", "recovered/2", &events.TurnRecovered{Attempt: 2, Resent: []string{"main/tool/c1"}, Replayed: 3}),
		events.MustNew("t1", "recovered/3", &events.TurnRecovered{Attempt: 3, OutcomeUnknown: []string{"main/tool/c2", "main/tool/c3"}, Replayed: 5}),
	}
	for i := range evs {
		evs[i].Session = session
	}
	if _, err := s.Append(ctx, session, 0, evs); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Audit(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rows {
		if e.Kind == "recovery" {
			got = append(got, fmt.Sprintf("%d %s %s %s %s", e.Seq, e.Turn, e.Path, e.Outcome, strings.ReplaceAll(e.Reason, " ", "")))
		}
	}
	want := []string{
		`3 t1 recovered/2 attempt 2 replayed3;resent["main/tool/c1"]`,
		`4 t1 recovered/3 attempt 3 replayed5;outcomeunknown["main/tool/c2","main/tool/c3"]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the audit's recoveries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
