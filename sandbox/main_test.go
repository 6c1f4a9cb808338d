package sandbox_test

import (
	"os"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func TestMain(m *testing.M) {
	if sandbox.IsHelper() { // this test binary is the sandbox's helper in its child processes
		sandbox.HelperMain()
	}
	os.Exit(m.Run())
}
