package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

func TestZZ(t *testing.T) {
	ws := t.TempDir()
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws}, "true")
		t.Logf("%v", time.Since(t0))
	}
}
