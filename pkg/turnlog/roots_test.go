package turnlog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

// shellApp is an app with the built-in tools on a workspace (none: the default)
// of a scope (none: the default, per user).
func shellApp(name, workspace, scope string) string {
	p := "{mode: workspace-write"
	if workspace != "" {
		p += ", workspace: " + workspace
	}
	if scope != "" {
		p += ", workspace_scope: " + scope
	}
	p += "}"
	return fmt.Sprintf(`  %s:
    start_agent: main
    llms:
      m: {provider: scripted, rules: [{reply: hi}]}
    policy: %s
    agents:
      main: {llm: m, tools: [read_file, bash]}
`, name, p)
}

// TestWorkspaceRootsNeverOverlapAcrossUsers: a shared or per-session root that
// holds, or lies in, another app's root is refused, naming both apps — however the
// roots are written (a symlink, the default) —; two per-user apps on one root, and
// apps on folders apart, are not.
func TestWorkspaceRootsNeverOverlapAcrossUsers(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root, other := filepath.Join(base, "root"), filepath.Join(base, "other")
	os.MkdirAll(filepath.Join(root, "users", "alice"), 0o755)
	os.MkdirAll(other, 0o755)
	os.Symlink(root, filepath.Join(base, "link"))
	for _, c := range []struct {
		name, a, b string
		refused    bool
	}{
		{"a shared and a per-user app on one root", shellApp("team", root, "shared"), shellApp("personal", root, ""), true},
		{"both on the default root, one shared", shellApp("team", "", "shared"), shellApp("personal", "", ""), true},
		{"a per-session root in a per-user one", shellApp("chat", filepath.Join(root, "users"), "session"), shellApp("personal", root, ""), true},
		{"a shared root through a symlink", shellApp("team", filepath.Join(base, "link"), "shared"), shellApp("personal", root, ""), true},
		{"a per-user root in another's user folder", shellApp("nested", filepath.Join(root, "users", "alice"), ""), shellApp("personal", root, ""), true},
		{"two per-session apps on one root", shellApp("s1", root, "session"), shellApp("s2", root, "session"), true},
		{"two per-user apps on one root", shellApp("p1", root, ""), shellApp("p2", root, ""), false},
		{"apps apart", shellApp("team", other, "shared"), shellApp("personal", root, ""), false},
	} {
		_, err := turnlogtest.LoadApps(t, "agent.yaml", []byte("apps:\n"+c.a+c.b), turnlog.Options{})
		switch {
		case c.refused && (err == nil || !strings.Contains(err.Error(), "overlaps")):
			t.Errorf("%s: %v", c.name, err)
		case c.refused:
			for _, app := range []string{firstWord(c.a), firstWord(c.b)} {
				if !strings.Contains(err.Error(), "app "+app) {
					t.Errorf("%s: the error does not name app %s: %v", c.name, app, err)
				}
			}
		case err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		}
	}
	// A folder named for one run serves the app it runs: nothing to overlap.
	if _, err := turnlogtest.LoadApps(t, "agent.yaml", []byte("apps:\n"+shellApp("team", root, "shared")+shellApp("personal", root, "")), turnlog.Options{Workspace: other}); err != nil {
		t.Errorf("turnlog run --workspace: %v", err)
	}
}

func firstWord(app string) string {
	return strings.TrimSuffix(strings.Fields(app)[0], ":")
}
