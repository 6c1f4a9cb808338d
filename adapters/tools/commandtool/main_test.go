package commandtool_test

import (
	"os"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.BecomeHelperIfAsked() // the sandbox starts this test binary as its helper
	code := m.Run()
	sandbox.ReleaseCgroups() // the groups kept for commands that will not come
	os.Exit(code)
}
