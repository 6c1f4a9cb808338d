package fsm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// shellTool stands for the bash tool: the policy classifies its command; running it
// only records what would have run.
type shellTool struct {
	mu  sync.Mutex
	ran []string
}

func (t *shellTool) Spec() fsm.ToolSpec {
	return fsm.ToolSpec{Name: "bash", Description: "runs a command", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (t *shellTool) PolicyCall(args json.RawMessage) fsm.PolicyCall {
	var a struct{ Command string }
	json.Unmarshal(args, &a)
	return fsm.PolicyCall{Shell: a.Command}
}

func (t *shellTool) Call(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
	var a struct{ Command string }
	json.Unmarshal(args, &a)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ran = append(t.ran, a.Command)
	return json.RawMessage(`{"exit_code":0}`), nil
}

func (t *shellTool) commands() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.ran, "; ")
}

// commandModel runs the input as one shell command, then answers with its output.
func commandModel() fsm.Model {
	return modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		if outs := lastOutputs(r.Items); len(outs) > 0 {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: outs[0]}}, nil
		}
		args, _ := json.Marshal(map[string]string{"command": r.Items[len(r.Items)-1].Content})
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "s1", Name: "bash", Arguments: args}}}}, nil
	})
}

// TestToolPolicyGuardsEveryCall: allow runs; deny never runs and tells the model the
// rule; require_approval asks a person with the level, rule and resources, and runs
// once approved. Every decision is a PolicyDecided event.
func TestToolPolicyGuardsEveryCall(t *testing.T) {
	t.Parallel()
	sh := &shellTool{}
	access := &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: "/work/repo", Rules: []policy.Rule{
		{Name: "no-push", Decision: policy.Deny, Commands: []string{"git push"}, Alternative: "commit; a person pushes"}}}
	b := setupApp(t, &fsm.App{Name: "test", StartAgent: "a", ToolPolicy: access,
		Agents: map[string]*fsm.Agent{"a": {Name: "a", LLM: "m", Model: commandModel(), Tools: []fsm.Tool{sh}}}})

	res, sid := b.turn(t, "ls -la")
	if res.Status != fsm.StatusCompleted || sh.commands() != "ls -la" {
		t.Fatalf("allowed: %+v, ran %q", res, sh.commands())
	}
	for _, cmd := range []string{"git push origin main", "cat .env", "ls; rm -rf /"} {
		res, _ = b.turn(t, cmd)
		if res.Status != fsm.StatusCompleted || !strings.Contains(res.Output, `"kind":"denied"`) || sh.commands() != "ls -la" {
			t.Fatalf("%s: %+v, ran %q", cmd, res, sh.commands())
		}
	}
	if !strings.Contains(res.Output, "default-deny") {
		t.Fatalf("the model is not told the rule: %s", res.Output)
	}
	evs, _ := b.store.Events(b.ctx, sid, 0)
	var decided []string
	for _, ev := range evs {
		if ev.Type == events.TypePolicyDecided {
			decided = append(decided, string(ev.Data))
		}
	}
	if len(decided) != 1 || !strings.Contains(decided[0], `"decision":"allow"`) || !strings.Contains(decided[0], `"level":"L0"`) {
		t.Fatalf("PolicyDecided: %v", decided)
	}

	res, sid = b.turn(t, "rm -rf build")
	if res.Status != fsm.StatusSuspended || len(res.Interrupts) != 1 {
		t.Fatalf("require_approval: %+v", res)
	}
	in := res.Interrupts[0]
	if in.Level != "L4" || in.Rule != "default:workspace-write:L4" || strings.Join(in.Resources, ",") != "delete build" || sh.commands() != "ls -la" {
		t.Fatalf("interrupt: %+v, ran %q", in, sh.commands())
	}
	st, err := b.engine.Resume(b.ctx, sid, "reviewer", map[string]fsm.Answer{in.ID: {Confirmed: yes()}})
	if err != nil {
		t.Fatal(err)
	}
	if done, err := st.Wait(); err != nil || done.Status != fsm.StatusCompleted || sh.commands() != "ls -la; rm -rf build" {
		t.Fatalf("approved: %+v %v, ran %q", done, err, sh.commands())
	}
	b.replayFresh(t, sid)
}

// TestPolicyChangesNeverActSilently: a turn suspended under older rules is decided
// again when it resumes. Tightened (the call is now denied): the stricter decision
// applies — the approved call does not run — and is recorded beside the first.
// Loosened (the call is now allowed): the recorded require_approval stands, so a
// rejection still keeps the call from running.
func TestPolicyChangesNeverActSilently(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		later   policy.Decision
		answer  *bool
		decided []string
		ran     string
	}{
		"tightened": {later: policy.Deny, answer: yes(), decided: []string{"require_approval", "deny"}, ran: ""},
		"loosened":  {later: policy.Allow, answer: no(), decided: []string{"require_approval"}, ran: ""},
		"unchanged": {later: policy.RequireApproval, answer: yes(), decided: []string{"require_approval"}, ran: "rm -rf build"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rules := func(d policy.Decision) *policy.Engine {
				return &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: "/work/repo", Rules: []policy.Rule{
					{Name: "deletes", Decision: d, Commands: []string{"rm"}}}}
			}
			app := func(d policy.Decision, sh *shellTool) *fsm.App {
				return &fsm.App{Name: "test", StartAgent: "a", ToolPolicy: rules(d),
					Agents: map[string]*fsm.Agent{"a": {Name: "a", LLM: "m", Model: commandModel(), Tools: []fsm.Tool{sh}}}}
			}
			first := &shellTool{}
			b := setupApp(t, app(policy.RequireApproval, first))
			res, sid := b.turn(t, "rm -rf build")
			if res.Status != fsm.StatusSuspended {
				t.Fatalf("%+v", res)
			}
			// The policy changes; turnlog restarts on the same database.
			later := &shellTool{}
			e, err := fsm.New(b.store, []*fsm.App{app(c.later, later)}, fsm.Options{Clock: testClock, NewID: counterIDs("id2")})
			if err != nil {
				t.Fatal(err)
			}
			st, err := e.Resume(b.ctx, sid, "reviewer", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: c.answer}})
			if err != nil {
				t.Fatal(err)
			}
			done, err := st.Wait()
			if err != nil || done.Status != fsm.StatusCompleted {
				t.Fatalf("%+v %v", done, err)
			}
			if got := first.commands() + later.commands(); got != c.ran {
				t.Fatalf("ran %q, want %q", got, c.ran)
			}
			evs, _ := b.store.Events(b.ctx, sid, 0)
			var decided []string
			for _, ev := range evs {
				if ev.Type == events.TypePolicyDecided {
					pd, _ := events.DecodeAs[*events.PolicyDecided](ev)
					decided = append(decided, pd.Decision)
				}
			}
			if strings.Join(decided, ",") != strings.Join(c.decided, ",") {
				t.Fatalf("PolicyDecided: %v, want %v", decided, c.decided)
			}
		})
	}
}
