package turnlog_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
	"github.com/turnlog/turnlog/projection"
)

const planConfig = `apps:
  work:
    start_agent: planner
    llms:
      m:
        provider: scripted
        rules:
          - {when: {after_tool: update_plan, output: '"error"'}, reply: "the plan was refused"}
          - {when: {after_tool: update_plan}, reply: "planned"}
          - {when: {input: '^two at once'}, tools: [{name: update_plan, arguments: '{"items": [{"text": "a", "status": "in_progress"}, {"text": "b", "status": "in_progress"}]}'}]}
          - {when: {input: '^start'}, tools: [{name: update_plan, arguments: '{"goal": "ship it", "items": [{"text": "build", "status": "in_progress"}, {"text": "test", "status": "pending"}]}'}]}
          - {when: {input: '^built'}, tools: [{name: update_plan, arguments: '{"goal": "ship it", "items": [{"text": "build", "status": "done"}, {"text": "test", "status": "in_progress"}]}'}]}
          - reply: "hello"
    agents:
      planner: {llm: m, tools: [update_plan]}
      other: {llm: m}
`

// TestThePlanIsARebuiltReadModel: update_plan, offered to the agent that lists it,
// sets the session's plan; the latest one that succeeded is the plan over REST and
// in the plan view, the same after the projections are rebuilt and the same as a
// fold over the whole log; a streamed turn sends a plan event when it changes; a plan
// it refuses changes nothing; a branch brings the plan it had at the branch point.
func TestThePlanIsARebuiltReadModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "t.db")
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: db, ConfigData: []byte(planConfig)})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	app, _ := tl.Engine.App("work")
	if names := specNames(app.Agents["other"]); strings.Contains(names, "update_plan") {
		t.Errorf("an agent that does not list update_plan is offered it: %s", names)
	}
	h, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k": "alice"}})
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(session string) string {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/sessions/"+session+"/plan", nil)
		req.Header.Set("Authorization", "Bearer k")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body)
	}
	s, _ := tl.Engine.CreateSession(ctx, "work", "alice", nil)
	if got := get(s.ID); got != `{"plan":null}`+"\n" {
		t.Fatalf("a session without a plan: %s", got)
	}
	// Streamed, the turn says when the plan changes: a plan event after its tool_result.
	req, _ := http.NewRequest("POST", srv.URL+"/v1/sessions/"+s.ID+"/turns", strings.NewReader(`{"input": "start", "stream": true}`))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(res.Body)
	res.Body.Close()
	at := strings.Index(string(stream), "event: tool_result")
	plan := strings.Index(string(stream), "event: plan\n")
	if at < 0 || plan < at || !strings.Contains(string(stream)[plan:], `"goal":"ship it"`) {
		t.Fatalf("the stream has no plan event after the tool result:\n%s", stream)
	}
	turns, _ := tl.Store.Turns(ctx, s.ID)
	branchAt := turns[0].ID
	runTurn(t, tl, s.ID, "built it")
	if res := runTurn(t, tl, s.ID, "two at once"); res.Output != "the plan was refused" {
		t.Fatalf("two steps in progress: %+v", res)
	}
	var got struct{ Plan projection.Plan }
	if err := json.Unmarshal([]byte(get(s.ID)), &got); err != nil {
		t.Fatal(err)
	}
	want := []projection.PlanItem{{Text: "build", Status: "done"}, {Text: "test", Status: "in_progress"}}
	if got.Plan.Goal != "ship it" || !reflect.DeepEqual(got.Plan.Items, want) || got.Plan.Session != s.ID {
		t.Fatalf("the plan: %+v", got.Plan)
	}
	// A fold over the whole log finds the same plan; so does a rebuild.
	all, _ := tl.Store.Events(ctx, s.ID, 0)
	var folded *projection.Plan
	for _, ev := range all {
		if tr, err := events.DecodeAs[*events.ToolResulted](ev); err == nil && ev.Type == events.TypeToolResulted && tr.Tool == "update_plan" && !tr.IsError {
			p, err := projection.PlanOf(ev)
			if err != nil {
				t.Fatal(err)
			}
			folded = &p
		}
	}
	incremental, err := tl.Store.Plan(ctx, s.ID)
	if err != nil || !reflect.DeepEqual(incremental, folded) {
		t.Fatalf("the read model %+v (%v), the fold %+v", incremental, err, folded)
	}
	if _, err := tl.Store.(interface {
		Rebuild(context.Context) (int64, error)
	}).Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if rebuilt, err := tl.Store.Plan(ctx, s.ID); err != nil || !reflect.DeepEqual(rebuilt, folded) {
		t.Fatalf("after a rebuild %+v (%v), the fold %+v", rebuilt, err, folded)
	}
	// The plan view, read with plain SQL.
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var goal, items string
	if err := conn.QueryRow(`SELECT goal, items FROM plan WHERE session_id = ?`, s.ID).Scan(&goal, &items); err != nil || goal != "ship it" ||
		items != `[{"status":"done","text":"build"},{"status":"in_progress","text":"test"}]` {
		t.Fatalf("the plan view: %q %q %v", goal, items, err)
	}
	// A branch at the first turn brings the plan as it stood then.
	b, err := tl.Engine.Branch(ctx, s.ID, "alice", fsm.BranchPoint{Turn: branchAt}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var branched struct{ Plan projection.Plan }
	json.Unmarshal([]byte(get(b.ID)), &branched)
	if branched.Plan.Items[0].Status != "in_progress" || branched.Plan.Session != s.ID {
		t.Fatalf("the branch's plan: %+v", branched.Plan)
	}
}

func specNames(ag *fsm.Agent) string {
	var names []string
	for _, t := range ag.Tools {
		names = append(names, t.Spec().Name)
	}
	return strings.Join(names, ",")
}

// TestUpdatePlanIsTurnlogs: an app may not declare a tool of that name.
func TestUpdatePlanIsTurnlogs(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(planConfig, "    agents:\n", "    tools:\n      update_plan: {function: ping}\n    agents:\n", 1)
	if _, err := turnlogtest.LoadApps(t, "agent.yaml", []byte(bad), turnlog.Options{Functions: functions()}); err == nil ||
		!strings.Contains(err.Error(), "apps.work.tools.update_plan: is turnlog's plan tool") {
		t.Fatalf("an app's own update_plan: %v", err)
	}
}
