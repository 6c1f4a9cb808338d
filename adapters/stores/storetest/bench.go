package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
)

// BenchAppends appends single small events from 1 and from 50 sessions at once,
// each caller waiting for its durable commit, and reports events/s: the same work on
// every store, so their figures compare. The one-session run is the baseline of the
// other (no commit shared).
func BenchAppends(b *testing.B, h Harness) {
	for _, sessions := range []int{1, 50} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			s, ctx := h.Open(b), context.Background()
			created := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "o", Agent: "main"})
			for i := 0; i < sessions; i++ {
				if _, err := s.Append(ctx, fmt.Sprintf("s%03d", i), 0, []events.Event{created}); err != nil {
					b.Fatal(err)
				}
			}
			ev := events.MustNew("t", "a/tool/c", &events.ToolResulted{CallID: "c", Tool: "noop", Output: `{"ok":true}`})
			per := b.N/sessions + 1
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < sessions; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("s%03d", i)
					for seq := int64(1); seq <= int64(per); seq++ {
						if _, err := s.Append(ctx, id, seq, []events.Event{ev}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*sessions)/time.Since(start).Seconds(), "events/s")
		})
	}
}
