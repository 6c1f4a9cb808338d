package fsm_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

func grantApp(sh *shellTool, rules ...policy.Rule) *fsm.App {
	return &fsm.App{Name: "test", StartAgent: "a", ToolPolicy: &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: "/work/repo", Rules: rules},
		Agents: map[string]*fsm.Agent{"a": {Name: "a", LLM: "m", Model: commandModel(), Tools: []fsm.Tool{sh}}}}
}

// runIn runs a turn of a session and, when it asks, answers every question with a.
func runIn(t *testing.T, b testBundle, e *fsm.Engine, sid, input string, a *fsm.Answer) *fsm.Result {
	t.Helper()
	res, err := e.RunTurn(b.ctx, sid, input)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != fsm.StatusSuspended || a == nil {
		return res
	}
	answers := map[string]fsm.Answer{}
	for _, in := range res.Interrupts {
		answers[in.ID] = *a
	}
	st, err := e.Resume(b.ctx, sid, "reviewer", answers)
	if err != nil {
		t.Fatal(err)
	}
	if res, err = st.Wait(); err != nil {
		t.Fatal(err)
	}
	return res
}

func lastDecision(t *testing.T, b testBundle, sid string) *events.PolicyDecided {
	t.Helper()
	evs, _ := b.store.Events(b.ctx, sid, 0)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == events.TypePolicyDecided {
			pd, _ := events.DecodeAs[*events.PolicyDecided](evs[i])
			return pd
		}
	}
	t.Fatal("no PolicyDecided")
	return nil
}

// TestAPersonSaysYesOnceForTheSession: an approval given for the session with its
// suggested pattern (the program) lets later calls that pattern names run without
// asking — recorded, listed with who gave it, inherited by a branch — never what the
// deny list refuses nor a command the pattern does not name; revoked, the next call
// asks again, in that session only; the session replays on a fresh store.
func TestAPersonSaysYesOnceForTheSession(t *testing.T) {
	t.Parallel()
	sh := &shellTool{}
	b := setupApp(t, grantApp(sh))
	s, err := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := b.engine.SuggestedGrant("test", "a/tool/s1/approval", "bash", []byte(`{"command":"rm -rf build"}`)); !ok || got != "rm" {
		t.Fatalf("suggested %q %v", got, ok)
	}
	asked, err := b.engine.RunTurn(b.ctx, s.ID, "rm -rf build")
	if err != nil || len(asked.Interrupts) != 1 || asked.Interrupts[0].Grant != "rm" {
		t.Fatalf("the question does not offer its pattern: %+v %v", asked, err)
	}
	st, err := b.engine.Resume(b.ctx, s.ID, "reviewer", map[string]fsm.Answer{asked.Interrupts[0].ID: {Confirmed: yes(), Grant: &fsm.GrantAnswer{}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != fsm.StatusCompleted || sh.commands() != "rm -rf build" {
		t.Fatalf("approved for the session: %+v, ran %q", res, sh.commands())
	}
	grants, err := b.engine.Grants(b.ctx, s.ID)
	if err != nil || len(grants) != 1 || grants[0].Command != "rm" || grants[0].By != "reviewer" || !grants[0].Holds || grants[0].Agent != "a" {
		t.Fatalf("grants: %+v %v", grants, err)
	}
	id := grants[0].ID

	res = runIn(t, b, b.engine, s.ID, "rm -rf dist", nil)
	if pd := lastDecision(t, b, s.ID); res.Status != fsm.StatusCompleted || pd.Decision != "allow" || pd.Rule != "grant:"+id || !strings.Contains(pd.Reason, `reviewer allowed "rm"`) {
		t.Fatalf("a later call the grant names: %+v, decided %+v", res, pd)
	}
	runIn(t, b, b.engine, s.ID, "rm -rf out; cat .env", nil)
	if pd := lastDecision(t, b, s.ID); pd.Decision != "deny" {
		t.Fatalf("the deny list gave way to a grant: %+v", pd)
	}
	res = runIn(t, b, b.engine, s.ID, "git reset --hard", &fsm.Answer{Confirmed: no()})
	if pd := lastDecision(t, b, s.ID); pd.Decision != "require_approval" || res.Status != fsm.StatusCompleted {
		t.Fatalf("a command the grant does not name: %+v %+v", pd, res)
	}
	if got := sh.commands(); got != "rm -rf build; rm -rf dist" {
		t.Fatalf("ran %q", got)
	}
	last, _ := b.store.LastTurn(b.ctx, s.ID)

	branch, err := b.engine.Branch(b.ctx, s.ID, "alice", fsm.BranchPoint{Turn: last.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.engine.RevokeGrant(b.ctx, s.ID, id, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.engine.RevokeGrant(b.ctx, s.ID, id, "alice"); !events.IsCode(err, events.CodeConflict) {
		t.Fatalf("a second revocation: %v", err)
	}
	if _, err := b.engine.RevokeGrant(b.ctx, s.ID, "nope", "alice"); !events.IsCode(err, events.CodeNotFound) {
		t.Fatalf("an unknown grant: %v", err)
	}
	if res = runIn(t, b, b.engine, s.ID, "rm -rf tmp2", nil); res.Status != fsm.StatusSuspended {
		t.Fatalf("revoked, the next call does not ask: %+v", res)
	}
	runIn(t, b, b.engine, branch.ID, "rm -rf tmp3", nil)
	if pd := lastDecision(t, b, branch.ID); pd.Rule != "grant:"+id {
		t.Fatalf("the branch does not hold the grant made before its branch point: %+v", pd)
	}
	bg, _ := b.engine.Grants(b.ctx, branch.ID)
	if len(bg) != 1 || bg[0].Session != s.ID || !bg[0].Holds {
		t.Fatalf("the branch's grants: %+v", bg)
	}

	audit, _ := b.store.Audit(b.ctx, s.ID)
	var seen []string
	for _, a := range audit {
		if a.Kind == "grant" {
			seen = append(seen, a.Outcome+" "+a.Rule+" "+a.Reason+" by "+a.By)
		}
	}
	if strings.Join(seen, "; ") != "given "+id+" rm by reviewer; revoked "+id+" revoked by alice by alice" {
		t.Fatalf("audit: %v", seen)
	}
	// The suspended turn is answered so the recording ends at rest, then replayed.
	in, _ := b.store.LastTurn(b.ctx, s.ID)
	evs, _ := b.store.Events(b.ctx, s.ID, in.StartSeq-1)
	for _, ev := range evs {
		if ev.Type == events.TypeApprovalRequested {
			ar, _ := events.DecodeAs[*events.ApprovalRequested](ev)
			st, err := b.engine.Resume(b.ctx, s.ID, "reviewer", map[string]fsm.Answer{ar.InterruptID: {Confirmed: yes(), Grant: &fsm.GrantAnswer{Prefix: "rm -rf tmp"}}})
			if err != nil {
				t.Fatal(err)
			}
			st.Wait()
		}
	}
	b.replayFresh(t, s.ID)
}

// TestAGrantAnswerIsChecked: a grant goes only with a yes to a question the policy
// asked, names literal words and a command the call asks about; a refused answer
// changes nothing.
func TestAGrantAnswerIsChecked(t *testing.T) {
	t.Parallel()
	sh := &shellTool{}
	b := setupApp(t, grantApp(sh))
	s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	res, err := b.engine.RunTurn(b.ctx, s.ID, "rm -rf build")
	if err != nil || res.Status != fsm.StatusSuspended {
		t.Fatalf("%+v %v", res, err)
	}
	id := res.Interrupts[0].ID
	for _, bad := range []struct {
		a     fsm.Answer
		field string
	}{
		{fsm.Answer{Confirmed: no(), Grant: &fsm.GrantAnswer{}}, ".grant"},
		{fsm.Answer{Confirmed: yes(), Grant: &fsm.GrantAnswer{Command: "git push"}}, ".grant"},
		{fsm.Answer{Confirmed: yes(), Grant: &fsm.GrantAnswer{Command: "rm *"}}, ".grant"},
		{fsm.Answer{Confirmed: yes(), Grant: &fsm.GrantAnswer{Command: "rm", Prefix: "rm"}}, ".grant"},
		{fsm.Answer{Confirmed: yes(), Arguments: []byte(`{"command":"rm -rf b2"}`), Grant: &fsm.GrantAnswer{}}, ".grant"},
	} {
		_, err := b.engine.Resume(b.ctx, s.ID, "reviewer", map[string]fsm.Answer{id: bad.a})
		var te *events.Error
		if !events.IsCode(err, events.CodeInvalid) || !errors.As(err, &te) || !strings.HasSuffix(te.Field, bad.field) {
			t.Errorf("%+v: %v", bad.a.Grant, err)
		}
	}
	if g, _ := b.engine.Grants(b.ctx, s.ID); len(g) != 0 || sh.commands() != "" {
		t.Fatalf("a refused answer changed something: %+v, ran %q", g, sh.commands())
	}
}

// TestAChangedPolicyRevokesAGrantWhenACallMeetsIt: turnlog restarts under another
// tool policy; the next call the grant names asks a person again, and the revocation
// is recorded (by turnlog, with both policies).
func TestAChangedPolicyRevokesAGrantWhenACallMeetsIt(t *testing.T) {
	t.Parallel()
	sh := &shellTool{}
	b := setupApp(t, grantApp(sh))
	s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	runIn(t, b, b.engine, s.ID, "rm -rf build", &fsm.Answer{Confirmed: yes(), Grant: &fsm.GrantAnswer{}})
	stricter := grantApp(sh, policy.Rule{Name: "no-curl", Decision: policy.Deny, Commands: []string{"curl"}})
	e, err := fsm.New(b.store, []*fsm.App{stricter}, fsm.Options{Clock: testClock, NewID: counterIDs("id2")})
	if err != nil {
		t.Fatal(err)
	}
	if res := runIn(t, b, e, s.ID, "ls", nil); res.Status != fsm.StatusCompleted {
		t.Fatalf("%+v", res)
	}
	if g, _ := e.Grants(b.ctx, s.ID); len(g) != 1 || g[0].Holds || g[0].Revoked != nil {
		t.Fatalf("before a call meets it, the grant is listed as not holding: %+v", g)
	}
	if res := runIn(t, b, e, s.ID, "rm -rf dist", nil); res.Status != fsm.StatusSuspended {
		t.Fatalf("under another policy the grant still allows: %+v", res)
	}
	g, _ := e.Grants(b.ctx, s.ID)
	if len(g) != 1 || g[0].Revoked == nil || g[0].Revoked.By != fsm.RevokedByTurnlog || !strings.Contains(g[0].Revoked.Reason, "tool policy changed") {
		t.Fatalf("the revocation is not recorded: %+v", g)
	}
}

// TestABranchHoldsOnlyTheGrantsBeforeItsPoint: a grant given in the source after the
// branch point is not the branch's.
func TestABranchHoldsOnlyTheGrantsBeforeItsPoint(t *testing.T) {
	t.Parallel()
	sh := &shellTool{}
	b := setupApp(t, grantApp(sh))
	s, _ := b.engine.CreateSession(b.ctx, "test", "alice", nil)
	runIn(t, b, b.engine, s.ID, "ls", nil)
	first, _ := b.store.LastTurn(b.ctx, s.ID)
	runIn(t, b, b.engine, s.ID, "rm -rf build", &fsm.Answer{Confirmed: yes(), Grant: &fsm.GrantAnswer{}})
	branch, err := b.engine.Branch(b.ctx, s.ID, "alice", fsm.BranchPoint{Turn: first.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := runIn(t, b, b.engine, branch.ID, "rm -rf dist", nil); res.Status != fsm.StatusSuspended {
		t.Fatalf("the branch took a grant given after its point: %+v", res)
	}
	replayStore, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	e, _ := fsm.New(replayStore, []*fsm.App{grantApp(&shellTool{})}, fsm.Options{Clock: time.Now, NewID: counterIDs("r")})
	rec, err := fsm.Recording(b.ctx, b.store, branch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Replay(b.ctx, rec); err != nil {
		t.Fatalf("replay: %v", err)
	}
}
