package functool

import "testing"

// TestSchemaIDsOutliveAMove: a schema's $id names the package its arguments were
// declared in as it was before adapters/ was grouped by kind, so the tool schemas a
// recorded session was sent hash the same after the move; any other package is
// named as it is.
func TestSchemaIDsOutliveAMove(t *testing.T) {
	for pkg, want := range map[string]string{
		"github.com/turnlog/turnlog/adapters/tools/memory":         "github.com/turnlog/turnlog/adapters/memory",
		"github.com/turnlog/turnlog/adapters/tools/workspacetools": "github.com/turnlog/turnlog/adapters/workspace",
		"github.com/turnlog/turnlog/adapters/tools/commandtool":    "github.com/turnlog/turnlog/adapters/commandtool",
		"github.com/turnlog/turnlog/adapters/memory":               "github.com/turnlog/turnlog/adapters/memory",
		"github.com/turnlog/turnlog/examples/demo":                 "github.com/turnlog/turnlog/examples/demo",
		"example.com/mine/tools":                                   "example.com/mine/tools",
	} {
		if got := schemaPackage(pkg); got != want {
			t.Errorf("%s: %s, want %s", pkg, got, want)
		}
	}
}
