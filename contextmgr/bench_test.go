package contextmgr_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
)

// sessionItems is a 300-turn coding session: each turn a user message, a tool call,
// its output (a few hundred bytes, every seventh a failure) and an answer.
func sessionItems(turns int) []events.Item {
	var items []events.Item
	for i := 1; i <= turns; i++ {
		id := fmt.Sprintf("call_%d", i)
		out := fmt.Sprintf(`{"exit_code":0,"stdout":"compiling pkg/mod%d\nok %d tests passed in %d.%02ds\n%s"}`, i, i*3, i%9, i%100, strings.Repeat("checked file.go line ", 10))
		if i%7 == 0 {
			out = fmt.Sprintf(`{"error":{"kind":"build_failed","message":"E_BUILD_%d in pkg/mod%d"}}`, i, i)
		}
		args, _ := json.Marshal(map[string]any{"module": fmt.Sprintf("pkg/mod%d", i)})
		items = append(items,
			events.UserMessage(fmt.Sprintf("turn %d: check module pkg/mod%d and tell me whether it builds", i, i)),
			events.Item{Type: events.ItemFunctionCall, CallID: id, Name: "run_build", Arguments: args},
			events.Item{Type: events.ItemFunctionCallOutput, CallID: id, Output: out},
			events.AssistantMessage("coder", fmt.Sprintf("module pkg/mod%d: build %d finished", i, i)))
	}
	return items
}

// BenchmarkContextBuild: building one request from a 300-turn session (1,200 items),
// with no summary (the window must trim the whole history) and after a compaction
// (the summary covers all but the last turn). Reported: µs per request.
func BenchmarkContextBuild(b *testing.B) {
	items := sessionItems(300)
	for _, c := range []struct {
		name    string
		summary bool
	}{{"no-summary", false}, {"after-compaction", true}} {
		b.Run(c.name, func(b *testing.B) {
			m := manager(b, 8000)
			p := m.Prepare()
			p.Append(items...)
			turnStart := len(items) - 4
			if c.summary {
				p.Append(events.Item{Type: events.ItemContextSummary, Content: "## Goal\nkeep the build green", Covers: turnStart})
			}
			b.ResetTimer()
			for b.Loop() {
				req, err := p.Build(turnStart)
				if err != nil || req.Tokens > 8000 {
					b.Fatalf("%v %d", err, req.Tokens)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/request")
		})
	}
}

// BenchmarkTokenCount: counting throughput of the offline o200k_base tables on
// mixed code and prose, in MB/s, and ÷ tiktoken-go's EncodeOrdinary on the same text
// in the same run (the reference the counter equals: tokens_reference_test.go).
func BenchmarkTokenCount(b *testing.B) {
	c, err := contextmgr.NewCounter(contextmgr.O200K)
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("func (p *Prepared) Build(turnStart int) (Request, error) { // builds the request\n\tThe quick brown fox jumps over the lazy dog 42 times.\n", 64)
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	ref, err := tiktoken.GetEncoding(contextmgr.O200K)
	if err != nil {
		b.Fatal(err)
	}
	refStart := time.Now()
	for i := 0; i < 20; i++ {
		ref.EncodeOrdinary(text)
	}
	refPer := time.Since(refStart) / 20
	b.SetBytes(int64(len(text)))
	tokens := 0
	for b.Loop() {
		tokens = c.Count(text)
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(float64(refPer)/float64(per), "×tiktoken-go")
}
