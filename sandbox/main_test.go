package sandbox_test

import (
	"os"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.BecomeHelperIfAsked() // the sandbox starts this test binary as its helper
	if raw := os.Getenv(standinEnv); raw != "" {
		os.Exit(runStandin(raw)) // a stand-in for turnlog that a test kills
	}
	code := m.Run()
	sandbox.ReleaseCgroups() // the groups kept for commands that will not come
	os.Exit(code)
}
