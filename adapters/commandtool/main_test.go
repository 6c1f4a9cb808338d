package commandtool_test

import (
	"os"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.BecomeHelperIfAsked() // the sandbox starts this test binary as its helper
	os.Exit(m.Run())
}
