package commandtool_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/commandtool"
	"github.com/turnlog/turnlog/sandbox"
)

// BenchmarkCommandToolVsBash: a command tool's call (arguments on stdin, stdout read
// as the output) against `bash true` in the same sandbox, alternately in the same
// run; it reports both and their ratio.
func BenchmarkCommandToolVsBash(b *testing.B) {
	spec := sandbox.Spec{Workspace: b.TempDir(), WorkspaceReadOnly: true}
	tool, err := commandtool.New(commandtool.Config{Name: "cat", Description: "echo the arguments", Argv: []string{"cat"}, Sandbox: spec})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var toolTime, bashTime time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if out, err := tool.Call(ctx, json.RawMessage(`{"n":1}`)); err != nil || string(out) != `{"n":1}` {
			b.Fatalf("command tool: %s %v", out, err)
		}
		toolTime += time.Since(start)
		start = time.Now()
		if res, err := sandbox.Run(ctx, spec, "true"); err != nil || res.ExitCode != 0 {
			b.Fatalf("bash true: %+v %v", res, err)
		}
		bashTime += time.Since(start)
	}
	b.ReportMetric(float64(toolTime.Microseconds())/float64(b.N)/1000, "tool-ms/call")
	b.ReportMetric(float64(bashTime.Microseconds())/float64(b.N)/1000, "bash-true-ms/call")
	b.ReportMetric(float64(toolTime)/float64(bashTime), "ratio")
}
