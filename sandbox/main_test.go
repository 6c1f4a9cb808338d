package sandbox_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.BecomeHelperIfAsked() // the sandbox starts this test binary as its helper
	// The main thread runs only this goroutine: every other runs on threads that end
	// when a goroutine exits locked to them (TestAProxyThreadLivesOn looks for that).
	runtime.LockOSThread()
	if raw := os.Getenv(standinEnv); raw != "" {
		os.Exit(runStandin(raw)) // a stand-in for turnlog that a test kills
	}
	code := m.Run()
	sandbox.ReleaseCgroups() // the groups kept for commands that will not come
	os.Exit(code)
}
