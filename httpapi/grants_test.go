package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/client"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// shellLike stands for a shell tool: the policy classifies its command; a call runs
// nothing and answers its command.
type shellLike struct{}

func (shellLike) Spec() fsm.ToolSpec {
	return fsm.ToolSpec{Name: "bash", Description: "runs a command", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (shellLike) PolicyCall(args json.RawMessage) fsm.PolicyCall {
	var a struct{ Command string }
	json.Unmarshal(args, &a)
	return fsm.PolicyCall{Shell: a.Command}
}

func (shellLike) Call(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
	return args, nil
}

// policyApp runs each input as one command of its shell tool, under a tool policy in
// workspace-write mode.
func policyApp() *fsm.App {
	model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
		last := r.Items[len(r.Items)-1]
		if last.Type == events.ItemFunctionCallOutput {
			return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "ran " + last.Output}}, nil
		}
		args, _ := json.Marshal(map[string]string{"command": last.Content})
		return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{{ID: "c1", Name: "bash", Arguments: args}}}}, nil
	})
	return &fsm.App{Name: "shell", StartAgent: "s", ToolPolicy: &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: "/w"},
		Agents: map[string]*fsm.Agent{"s": {Name: "s", LLM: "m", Model: model, Tools: []fsm.Tool{shellLike{}}}}}
}

// TestAGrantOverHTTP: resume_map's grant says yes for the rest of the session; the
// grants are listed, revoked with who, and a second revocation is a conflict; a grant
// where the tool policy did not ask (a tool that always asks) is refused.
func TestAGrantOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := context.Background(), b.as("key-alice")
	id := b.newSession(t, "key-alice", "shell")
	res, err := c.RunTurn(ctx, id, client.TurnRequest{Input: "rm -rf build"})
	if err != nil || res.Status != "suspended" || res.SuspendPayload == nil || res.SuspendPayload.Rule == "" {
		t.Fatalf("%+v %v", res, err)
	}
	in := res.SuspendPayload.ID
	if res.SuspendPayload.Grant != "rm" {
		t.Fatalf("the interrupt offers %q for the session", res.SuspendPayload.Grant)
	}
	if r := b.do(t, "GET", "/v1/sessions/"+id+"/interrupts", "key-alice", ""); !strings.Contains(r.raw, `"grant":"rm"`) {
		t.Fatalf("the pending interrupts: %s", r.raw)
	}
	if tr, err := c.Turn(ctx, id, res.TurnID, 0); err != nil || len(tr.Interrupts) != 1 || tr.Interrupts[0].Grant != "rm" {
		t.Fatalf("the turn resource: %+v %v", tr, err)
	}
	turns := "/v1/sessions/" + id + "/turns"
	for body, message := range map[string]string{
		`{"resume_map":{"` + in + `":{"confirmed":true,"grant":{"pattern":"rm"}}}}`:       "resume_map." + in + `: must be an object such as {\"confirmed\": true}: unknown field \"pattern\"`,
		`{"resume_map":{"` + in + `":{"confirmed":true,"grant":{"command":"git push"}}}}`: "resume_map." + in + `.grant: \"git push\" covers no command this call asks about (rm -rf build)`,
		`{"resume_map":{"` + in + `":{"confirmed":false,"grant":{}}}}`:                    "resume_map." + in + ".grant: goes only with confirmed: true",
	} {
		if r := b.do(t, "POST", turns, "key-alice", body); r.status != 400 || !strings.Contains(r.raw, `"message":"`+message) {
			t.Errorf("%s: %d %s", body, r.status, r.raw)
		}
	}
	res, err = c.RunTurn(ctx, id, client.TurnRequest{ResumeMap: map[string]client.Answer{in: client.ApproveForSession(client.GrantPattern{})}})
	if err != nil || res.Status != "completed" {
		t.Fatalf("%+v %v", res, err)
	}
	grants, err := c.Grants(ctx, id)
	if err != nil || len(grants) != 1 || grants[0].Command != "rm" || grants[0].By != "alice" || !grants[0].Holds {
		t.Fatalf("grants: %+v %v", grants, err)
	}
	if res, err = c.RunTurn(ctx, id, client.TurnRequest{Input: "rm -rf dist"}); err != nil || res.Status != "completed" {
		t.Fatalf("the grant did not hold: %+v %v", res, err)
	}
	if r := b.do(t, "GET", "/v1/sessions/"+id+"/grants", "key-bob", ""); r.status != http.StatusNotFound {
		t.Fatalf("another user read the grants: %d", r.status)
	}
	if r := b.do(t, "DELETE", "/v1/sessions/"+id+"/grants/"+grants[0].ID, "key-bob", ""); r.status != http.StatusNotFound {
		t.Fatalf("another user revoked a grant: %d", r.status)
	}
	g, err := c.RevokeGrant(ctx, id, grants[0].ID)
	if err != nil || g.Revoked == nil || g.Revoked.By != "alice" || g.Holds {
		t.Fatalf("revoke: %+v %v", g, err)
	}
	if r := b.do(t, "DELETE", "/v1/sessions/"+id+"/grants/"+grants[0].ID, "key-alice", ""); r.status != http.StatusConflict {
		t.Fatalf("a second revocation: %d %s", r.status, r.raw)
	}
	if res, err = c.RunTurn(ctx, id, client.TurnRequest{Input: "rm -rf out"}); err != nil || res.Status != "suspended" {
		t.Fatalf("revoked, the call does not ask: %+v %v", res, err)
	}
	audit, _ := c.Audit(ctx, id)
	var kinds []string
	for _, a := range audit {
		if a.Kind == "grant" {
			kinds = append(kinds, a.Outcome)
		}
	}
	if strings.Join(kinds, ",") != "given,revoked" {
		t.Fatalf("audit grants: %v", kinds)
	}

	demo := b.newSession(t, "key-alice", "demo")
	refund := b.suspendRefund(t, "/v1/sessions/"+demo+"/turns", "key-alice")
	if r := b.do(t, "POST", "/v1/sessions/"+demo+"/turns", "key-alice", `{"resume_map":{"`+refund+`":{"confirmed":true,"grant":{}}}}`); r.status != 400 ||
		!strings.Contains(r.raw, "asks every time") {
		t.Fatalf("a grant of a tool that always asks: %d %s", r.status, r.raw)
	}
}
