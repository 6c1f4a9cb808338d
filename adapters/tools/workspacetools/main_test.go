package workspacetools_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.BecomeHelperIfAsked() // the sandbox starts this test binary as its helper
	code := m.Run()
	sandbox.ReleaseCgroups() // the groups kept for commands that will not come
	os.Exit(code)
}

// testMechanism is the sandbox mechanism the boundary tests run under:
// TURNLOG_TEST_MECHANISM (make test runs them again with bubblewrap), landlock by
// default. Without bwrap a bubblewrap run skips — or fails where
// TURNLOG_REQUIRE_BWRAP says it must run (CI).
func testMechanism(t *testing.T) string {
	m := os.Getenv("TURNLOG_TEST_MECHANISM")
	if m == sandbox.MechanismBubblewrap {
		if _, err := exec.LookPath("bwrap"); err != nil {
			if os.Getenv("TURNLOG_REQUIRE_BWRAP") != "" {
				t.Fatalf("bubblewrap is required and bwrap is not installed: %v", err)
			}
			t.Skip("bwrap is not installed")
		}
	}
	return m
}

// openWorkspace opens dir as a workspace for the test.
func openWorkspace(t *testing.T, dir string) *sandbox.Workspace {
	t.Helper()
	ws, err := sandbox.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}
