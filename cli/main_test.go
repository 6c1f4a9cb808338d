package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

// TestMain serves the sandbox's helper when the commands a test runs start it, and
// runs the tests from the repository's root, where the examples and fixtures they
// name are.
func TestMain(m *testing.M) {
	if sandbox.IsHelper() {
		sandbox.HelperMain()
	}
	if err := os.Chdir(".."); err != nil {
		panic(err)
	}
	if _, err := os.Stat(filepath.Join("examples", "coder.yaml")); err != nil {
		panic("the tests of cli run from the repository's root: " + err.Error())
	}
	code := m.Run()
	sandbox.ReleaseCgroups()
	os.Exit(code)
}
