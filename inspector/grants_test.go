package inspector_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/examples/demo"
)

// askingConfig is the demo with an app whose every turn removes a file with bash,
// which its policy asks a person about.
func askingConfig(dir string) []byte {
	app := `  asking:
    start_agent: worker
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: removed
          - tools: [{name: bash, arguments: '{"command": "rm -f gone.txt"}'}]
    agents:
      worker: {llm: script, tools: [bash]}
    policy:
      mode: workspace-write
      workspace: ` + dir + `
      workspace_scope: session
`
	return []byte(strings.Replace(string(demo.Config), "apps:\n", "apps:\n"+app, 1))
}

// TestApproveForTheSessionAndRevoke: the page offers a yes for the rest of the
// session with the pattern it would cover; given, the next turn's removal runs
// without asking and the page lists the grant with who gave it; revoked there, the
// removal asks again. A question the tool policy did not ask offers no such yes.
func TestApproveForTheSessionAndRevoke(t *testing.T) {
	t.Parallel()
	b := setupConfig(t, askingConfig(t.TempDir()), "", false)
	s, res := b.sessionOf("asking", "alice", "tidy up")
	if res == nil || len(res.Interrupts) != 1 {
		t.Fatalf("suspend: %+v", res)
	}
	id := res.Interrupts[0].ID
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	if !strings.Contains(page.body, `value="session"`) || !strings.Contains(page.body, `name="grant.`+id+`" value="rm"`) {
		t.Fatalf("no yes for the session offered: %s", page.body)
	}
	a := w.do("POST", "/ui/sessions/"+s.ID+"/answers", url.Values{"csrf": {csrfOf(t, page.body)}, "choice." + id: {"session"}, "grant." + id: {"rm"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("approve for the session: %d %s", a.status, a.body)
	}
	b.settled(s.ID)
	if res = b.turn(s.ID, "tidy up again"); res.Status != "completed" {
		t.Fatalf("the grant does not hold: %+v", res)
	}
	page = w.do("GET", "/ui/sessions/"+s.ID, nil)
	if !strings.Contains(page.body, "Allowed for the session") || !strings.Contains(page.body, "<code>rm</code>") || !strings.Contains(page.body, ">holds<") {
		t.Fatalf("the grant is not listed: %s", page.body)
	}
	grants, _ := b.tl.Engine.Grants(t.Context(), s.ID)
	if len(grants) != 1 || grants[0].By != "alice" {
		t.Fatalf("grants: %+v", grants)
	}
	if r := w.do("POST", "/ui/sessions/"+s.ID+"/grants/"+grants[0].ID+"/revoke", url.Values{}); r.status != http.StatusForbidden {
		t.Fatalf("a revocation without CSRF: %d", r.status)
	}
	if r := w.do("POST", "/ui/sessions/"+s.ID+"/grants/"+grants[0].ID+"/revoke", url.Values{"csrf": {csrfOf(t, page.body)}}); r.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if res = b.turn(s.ID, "tidy up once more"); res.Status != "suspended" {
		t.Fatalf("revoked, the removal does not ask: %+v", res)
	}
	page = w.do("GET", "/ui/sessions/"+s.ID, nil)
	if !strings.Contains(page.body, "revoked by alice") {
		t.Fatalf("the revocation is not shown: %s", page.body)
	}

	d, res := b.session("alice", "refund order 42")
	if page = w.do("GET", "/ui/sessions/"+d.ID, nil); strings.Contains(page.body, `value="session"`) || len(res.Interrupts) != 1 {
		t.Fatalf("a tool that always asks is offered a yes for the session: %s", page.body)
	}
}
