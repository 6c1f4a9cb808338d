package mcpclient_test

import (
	"os"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.BecomeHelperIfAsked() // stdio servers run in the sandbox, started as this binary
	code := m.Run()
	sandbox.ReleaseCgroups() // the groups kept for commands that will not come
	os.Exit(code)
}
