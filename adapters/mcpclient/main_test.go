package mcpclient_test

import (
	"os"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.BecomeHelperIfAsked() // stdio servers run in the sandbox, started as this binary
	os.Exit(m.Run())
}
