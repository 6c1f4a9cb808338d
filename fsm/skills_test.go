package fsm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/models/scripted"
	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/skills"
)

// installSkills writes n skills under a new root; skill-48 needs a tool the agent
// lacks, skill-49 asks for a network permission.
func installSkills(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("skill-%02d", i)
		extra := ""
		switch i {
		case 48:
			extra = "required_tools: [bash]\n"
		case 49:
			extra = "permissions:\n  - network: evil.example.com\n"
		}
		body := fmt.Sprintf("BODY-MARKER-%02d\n%s", i, strings.Repeat("Follow these steps carefully and check every result before going on. ", 40))
		os.MkdirAll(filepath.Join(root, name), 0o755)
		content := fmt.Sprintf("---\nname: %s\ndescription: Use when the task is about area %d of the product.\n%s---\n%s\n", name, i, extra, body)
		if err := os.WriteFile(filepath.Join(root, name, skills.File), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func skillsApp(t *testing.T, root string) *fsm.App {
	t.Helper()
	set, err := skills.Load([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	model, err := scripted.New([]scripted.Rule{
		{When: scripted.When{AfterTool: "load_skill", Output: "skill_refused"}, Reply: "refused: {{output.error.message}}"},
		{When: scripted.When{AfterTool: "load_skill"}, Reply: "loaded"},
		{When: scripted.When{Input: `^load (\S+)`}, Tools: []scripted.ToolCall{{Name: "load_skill", Arguments: `{"name": "{{match.1}}"}`}}},
		{Reply: "hello"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ag := &fsm.Agent{Name: "helper", Instructions: "You help.", LLM: "scripted", Model: model, Skills: set}
	return &fsm.App{Name: "test", StartAgent: "helper", Agents: map[string]*fsm.Agent{"helper": ag},
		ToolPolicy: &policy.Engine{Mode: policy.ModeNetworkOff, Workspace: t.TempDir()}}
}

// TestSkillsCostContextOnlyWhenLoaded: with 50 skills installed the first request
// carries only their index (its token cost is measured against the bodies'); loading
// a skill adds its body once, loading it again does not add it twice; a skill that
// needs a permission the policy does not grant, or a tool the agent lacks, is
// refused; the session replays, and a replay after a skill file changed is
// nondeterminism naming the skill.
func TestSkillsCostContextOnlyWhenLoaded(t *testing.T) {
	t.Parallel()
	root := installSkills(t, 50)
	app := skillsApp(t, root)
	var seen seenRequests
	store, _ := sqlite.MustOpen(t, sqlite.Options{Clock: testClock, Synchronous: "OFF"})
	e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: testClock, NewID: counterIDs("id"), Requests: seen.see})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := e.CreateSession(ctx, "test", "alice", nil)
	run := func(input string) *fsm.Result {
		t.Helper()
		res, err := e.RunTurn(ctx, s.ID, input)
		if err != nil || res.Status != fsm.StatusCompleted {
			t.Fatalf("%s: %+v %v", input, res, err)
		}
		return res
	}
	run("hello")
	first := seen.byKey[seen.order[0]]
	counter, _ := contextmgr.NewCounter(contextmgr.O200K)
	instructions, _, _ := strings.Cut(first.Instructions, "\n\n## Tools and permissions")
	index, bodies := counter.Count(instructions), 0
	for i := 0; i < 50; i++ {
		sk, _ := app.Agents["helper"].Skills.Get(fmt.Sprintf("skill-%02d", i))
		bodies += counter.Count(sk.Body)
		if !strings.Contains(first.Instructions, sk.Name+": Use when the task is about area") {
			t.Fatalf("the index lacks %s", sk.Name)
		}
	}
	if strings.Contains(fmt.Sprint(first), "BODY-MARKER") || index > bodies/10 || index > 50*40 || !strings.Contains(first.Instructions, "## Tools and permissions") {
		t.Fatalf("the first request holds %d tokens of instructions for %d tokens of skill bodies", index, bodies)
	}
	t.Logf("index of 50 skills: %d tokens (instructions included); the bodies: %d tokens", index, bodies)

	run("load skill-07")
	run("load skill-07")
	last := seen.byKey[seen.order[len(seen.order)-1]]
	if n := strings.Count(fmt.Sprint(last.Items), "BODY-MARKER-07"); n != 1 {
		t.Fatalf("the body is in the request %d times", n)
	}
	if res := run("load skill-49"); !strings.HasPrefix(res.Output, "refused: skill skill-49 needs \"network evil.example.com\", which the policy does not grant") {
		t.Fatalf("a skill asking for the network: %s", res.Output)
	}
	if res := run("load skill-48"); !strings.Contains(res.Output, "needs the tool bash, which agent helper does not have") {
		t.Fatalf("a skill needing a missing tool: %s", res.Output)
	}
	recorded, _ := store.Events(ctx, s.ID, 0)
	var loaded []string
	for _, ev := range recorded {
		if ev.Type == events.TypeSkillLoaded {
			sl, _ := events.DecodeAs[*events.SkillLoaded](ev)
			loaded = append(loaded, sl.Name)
		}
	}
	if strings.Join(loaded, ",") != "skill-07" {
		t.Fatalf("SkillLoaded for %v", loaded)
	}
	audit, _ := store.Audit(ctx, s.ID)
	if len(audit) != 1 || audit[0].Kind != "skill" || audit[0].Outcome != "skill-07" {
		t.Fatalf("audit: %+v", audit)
	}

	replay := func(app *fsm.App) error {
		st, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
		re, err := fsm.New(st, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("r")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = re.Replay(ctx, recorded)
		return err
	}
	if err := replay(app); err != nil {
		t.Fatalf("replay: %v", err)
	}
	file := filepath.Join(root, "skill-07", skills.File)
	raw, _ := os.ReadFile(file)
	os.WriteFile(file, append(raw, "One more step.\n"...), 0o644)
	if err := replay(skillsApp(t, root)); events.CodeOf(err) != events.CodeNondeterminism || !strings.Contains(err.Error(), "skill skill-07 changed since the recording") {
		t.Fatalf("replay after the skill changed: %v", err)
	}
}
