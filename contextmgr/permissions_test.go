package contextmgr_test

import (
	"strings"
	"testing"

	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
)

// TestThePermissionsCountInTheToolsLayer: a manager for requests that carry the
// permissions section counts its tokens in the tools layer, the rest alike; a section
// that would fill the window is an error.
func TestThePermissionsCountInTheToolsLayer(t *testing.T) {
	m := manager(t, 4000)
	section := "## Tools and permissions\n\n- Mode workspace-write: you may read and change files in the workspace."
	with, err := m.WithPermissions(section)
	if err != nil {
		t.Fatal(err)
	}
	build := func(m *contextmgr.Manager) contextmgr.Request {
		p := m.Prepare()
		p.Append(events.UserMessage("fix the failing test"))
		req, err := p.Build(0)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	a, b := build(m), build(with)
	n := m.Counter().Count(section)
	if b.Layers[contextmgr.LayerTools]-a.Layers[contextmgr.LayerTools] != n || b.Layers[contextmgr.LayerRules] != a.Layers[contextmgr.LayerRules] || b.Tokens-a.Tokens != n {
		t.Fatalf("layers %v → %v, tokens %d → %d, the section %d tokens", a.Layers, b.Layers, a.Tokens, b.Tokens, n)
	}
	if _, err := m.WithPermissions(strings.Repeat("permissions ", 5000)); err == nil || !strings.Contains(err.Error(), "window") {
		t.Fatalf("a section that fills the window: %v", err)
	}
}
