package fsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// BenchmarkApprovalRoundTrip measures a turn that suspends on a tool needing approval
// plus its resume to completion (durable commits), on a fresh session and on one whose
// history holds 4,400 items; sync=OFF (no fsync) shows what is not the disk.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	for _, c := range []struct {
		turns int
		sync  string
	}{{0, "FULL"}, {200, "FULL"}, {0, "OFF"}} {
		turns := c.turns
		b.Run(fmt.Sprintf("history=%d/sync=%s", turns*22, c.sync), func(b *testing.B) {
			store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Synchronous: c.sync})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			refund := functool.MustNew("refund", "refunds", func(_ context.Context, a refundArgs) (any, error) { return a, nil })
			model := modelFunc(func(r fsm.ModelRequest) (fsm.ModelResponse, error) {
				if last := r.Items[len(r.Items)-1]; last.Type == events.ItemFunctionCallOutput {
					return fsm.ModelResponse{ModelResponse: events.ModelResponse{Text: "refunded"}}, nil
				}
				return fsm.ModelResponse{ModelResponse: events.ModelResponse{ToolCalls: []events.ToolCall{
					{ID: fmt.Sprintf("c%d", len(r.Items)), Name: "refund", Arguments: json.RawMessage(`{"order_id":42}`)}}}}, nil
			})
			agent := &fsm.Agent{Name: "a", LLM: "m", Model: model, Tools: []fsm.Tool{&approval{refund}}}
			app := &fsm.App{Name: "test", StartAgent: "a", Agents: map[string]*fsm.Agent{"a": agent}}
			e, err := fsm.New(store, []*fsm.App{app}, fsm.Options{Clock: time.Now, NewID: counterIDs("b")})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			id := "fresh"
			if turns > 0 {
				seedSession(b, store, "long", turns, 22)
				id = "long"
			} else if _, err := e.CreateSession(ctx, "test", "alice", nil); err != nil {
				b.Fatal(err)
			} else {
				s, _ := store.SessionPage(ctx, "alice", "", time.Time{}, "", 1)
				id = s[0].ID
			}
			var took []time.Duration
			probe := storetest.NewFsyncProbe(b, b.TempDir())
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				probe.Sample(3) // between round trips, so the floor is measured all through the run
				b.StartTimer()
				start := time.Now()
				res, err := e.RunTurn(ctx, id, "refund order 42")
				if err != nil || res.Status != fsm.StatusSuspended {
					b.Fatalf("suspend: %+v %v", res, err)
				}
				st, err := e.Resume(ctx, id, "reviewer", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: yes()}})
				if err != nil {
					b.Fatal(err)
				}
				if res, err := st.Wait(); err != nil || res.Status != fsm.StatusCompleted {
					b.Fatalf("resume: %+v %v", res, err)
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			fsync := probe.Median()
			b.ReportMetric(float64(percentile(took, 0.5))/1e6, "p50-ms")
			b.ReportMetric(float64(percentile(took, 0.99))/1e6, "p99-ms")
			b.ReportMetric(float64(fsync)/1e6, "fsync-ms")
			b.ReportMetric(float64(percentile(took, 0.5))/float64(fsync), "p50/fsync")
			all, synced := store.Commits()
			b.ReportMetric(float64(all)/float64(b.N), "commits/op")
			b.ReportMetric(float64(synced)/float64(b.N), "fsyncs/op")
		})
	}
}
