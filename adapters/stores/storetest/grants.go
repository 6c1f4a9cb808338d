package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
)

// GrantStore is what CheckGrants needs of a store.
type GrantStore interface {
	AuditReader
	Append(ctx context.Context, session string, after int64, evs []events.Event) ([]events.Event, error)
	GrantEvents(ctx context.Context, session string, upto int64) ([]events.Event, error)
}

// CheckGrants checks that a store reads a session's grant events alone, up to a seq,
// and lists them in the audit: given (the pattern, who) and revoked (why, who).
func CheckGrants(t *testing.T, s GrantStore, session string) {
	t.Helper()
	ctx := context.Background()
	evs := []events.Event{events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main"})}
	for i := range 50 { // other events, which the grants' own index passes over
		evs = append(evs, events.MustNew("t1", fmt.Sprintf("main/tool/c%d/policy", i), &events.PolicyDecided{CallID: fmt.Sprint(i), Tool: "bash", Decision: "allow", Level: "L0", Rule: "r"}))
	}
	evs = append(evs,
		events.MustNew("t1", "main/tool/c1/approval/grant", &events.GrantGiven{GrantID: "g1", InterruptID: "i1", Agent: "main", Tool: "bash", Command: "git push", Policy: "sha256:1", By: "bob"}),
		events.MustNew("t1", "main/tool/c2/approval/grant", &events.GrantGiven{GrantID: "g2", InterruptID: "i2", Agent: "main", Tool: "bash", Prefix: "npm run", Policy: "sha256:1", By: "bob"}),
		events.MustNew("", "grants/g1", &events.GrantRevoked{GrantID: "g1", By: "alice", Reason: "revoked by alice"}))
	for i := range evs {
		evs[i].Session = session
	}
	if _, err := s.Append(ctx, session, 0, evs); err != nil {
		t.Fatal(err)
	}
	for upto, want := range map[int64]string{0: "GrantGiven GrantGiven GrantRevoked", 52: "GrantGiven", 53: "GrantGiven GrantGiven", 10: ""} {
		got, err := s.GrantEvents(ctx, session, upto)
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, ev := range got {
			types = append(types, ev.Type)
		}
		if strings.Join(types, " ") != want {
			t.Errorf("grant events up to %d: %v, want %s", upto, types, want)
		}
	}
	rows, err := s.Audit(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rows {
		if e.Kind == "grant" {
			got = append(got, fmt.Sprintf("%s %s %s %q %s %q %q", e.Kind, e.Turn, e.Path, e.Tool, e.Outcome, e.Rule+": "+e.Reason, e.By))
		}
	}
	want := []string{
		`grant t1 main/tool/c1/approval/grant "bash" given "g1: git push" "bob"`,
		`grant t1 main/tool/c2/approval/grant "bash" given "g2: npm run…" "bob"`,
		`grant  grants/g1 "" revoked "g1: revoked by alice" "alice"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the audit's grants:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
