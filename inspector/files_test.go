package inspector_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// filesConfig is an app whose turns write with write_file in the shared workspace
// ws: "write X" notes.txt, its last line X; "blob" text over data.bin.
func filesConfig(ws string) []byte {
	return []byte(fmt.Sprintf(`apps:
  files:
    start_agent: main
    llms:
      script:
        provider: scripted
        rules:
          - when: {after_tool: "*"}
            reply: written
          - when: {input: "^write (.+)$"}
            tools: [{name: write_file, arguments: '{"path": "notes.txt", "content": "one\ntwo\n{{match.1}}\n", "overwrite": true}'}]
          - when: {input: "^blob$"}
            tools: [{name: write_file, arguments: '{"path": "data.bin", "content": "text\n", "overwrite": true}'}]
    agents:
      main: {llm: script, tools: [write_file]}
    policy:
      mode: workspace-write
      workspace: %s
      workspace_scope: shared
      rules:
        - {name: writes, tools: [write_file], decision: allow}
`, ws))
}

// TestATurnsFilesAreShownAndReverted: a turn's page lists each path its calls
// changed with a diff (binary marked); "Revert this turn" puts them back; a path
// changed since is a conflict page naming it, whose form forces the revert; "Back
// to here" undoes the turns after one. The audit lists the files per call.
func TestATurnsFilesAreShownAndReverted(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "data.bin"), []byte{0, 1}, 0o644)
	b := setupConfig(t, filesConfig(ws), "", false)
	s, first := b.sessionOf("files", "alice", "write first")
	second := b.turn(s.ID, "write second")
	blob := b.turn(s.ID, "blob")
	w := b.browser()
	w.signIn("k-alice")

	page := w.do("GET", "/ui/sessions/"+s.ID+"/turns/"+second.TurnID, nil)
	for _, want := range []string{"<h2 id=\"files-h\">Files</h2>", "<code>notes.txt</code> · changed: 14 → 15 bytes", "-first\n&#43;second", "Revert this turn", "Back to here"} {
		if !strings.Contains(page.body, want) {
			t.Fatalf("the turn's page lacks %q: %s", want, page.body)
		}
	}
	if p := w.do("GET", "/ui/sessions/"+s.ID+"/turns/"+blob.TurnID, nil).body; !strings.Contains(p, "<code>data.bin</code> · changed: 2 → 5 bytes") || !strings.Contains(p, "(binary)") {
		t.Fatalf("the binary file: %s", p)
	}
	csrf := csrfOf(t, page.body)

	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("someone else\n"), 0o644)
	a := w.do("POST", "/ui/sessions/"+s.ID+"/turns/"+second.TurnID+"/revert", url.Values{"csrf": {csrf}, "key": {"k1"}})
	if a.status != http.StatusConflict || !strings.Contains(a.body, "<code>notes.txt</code>") || !strings.Contains(a.body, `name="force" value="true"`) {
		t.Fatalf("a revert over a changed path: %d %s", a.status, a.body)
	}
	if a := w.do("POST", "/ui/sessions/"+s.ID+"/turns/"+second.TurnID+"/revert", url.Values{"key": {"k2"}, "force": {"true"}}); a.status != http.StatusForbidden {
		t.Fatalf("a revert without the CSRF token: %d", a.status)
	}
	a = w.do("POST", "/ui/sessions/"+s.ID+"/turns/"+second.TurnID+"/revert", url.Values{"csrf": {csrf}, "key": {"k3"}, "force": {"true"}})
	if a.status != http.StatusSeeOther || !strings.Contains(a.header.Get("Location"), "done=reverted") {
		t.Fatalf("the forced revert: %d %s", a.status, a.body)
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(raw) != "one\ntwo\nfirst\n" {
		t.Fatalf("after the revert notes.txt holds %q", raw)
	}
	a = w.do("POST", "/ui/sessions/"+s.ID+"/revert", url.Values{"csrf": {csrf}, "key": {"k4"}, "to_turn": {first.TurnID}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("back to the first turn: %d %s", a.status, a.body)
	}
	if raw, _ := os.ReadFile(filepath.Join(ws, "data.bin")); string(raw) != "\x00\x01" {
		t.Fatalf("back to the first turn left data.bin %q", raw)
	}
	audit := w.do("GET", "/ui/sessions/"+s.ID+"/audit", nil).body
	if strings.Count(audit, "paths changed") != 3 || strings.Count(audit, "paths put back") != 2 {
		t.Fatalf("the audit's files: %s", audit)
	}
}
