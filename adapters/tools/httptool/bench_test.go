package httptool

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
)

type orderArgs struct {
	OrderID int    `json:"order_id"`
	Note    string `json:"note,omitempty"`
}

func p50(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// BenchmarkHTTPToolOverhead: one call of an HTTP tool over loopback (signed, the
// key derived, the answer read) against one of an in-process Go function tool with
// the same schema, alternately in the same run; it reports each p50 and what HTTP
// adds (target: at most 0.3 ms at p50).
func BenchmarkHTTPToolOverhead(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"refunded":true}`)
	}))
	defer srv.Close()
	httpTool, err := New(Config{Name: "refund", URL: srv.URL + "/refund", Parameters: json.RawMessage(orderSchema), Secrets: [][]byte{[]byte("bench-secret-of-some-length")}})
	if err != nil {
		b.Fatal(err)
	}
	goTool := functool.MustNew("refund", "refund", func(context.Context, orderArgs) (any, error) {
		return map[string]bool{"refunded": true}, nil
	})
	ctx := fsm.WithCallInfo(context.Background(), testCall)
	args := json.RawMessage(`{"order_id":42}`)
	var goTimes, httpTimes []time.Duration
	call := func(t fsm.Tool, into *[]time.Duration) {
		start := time.Now()
		if _, err := t.Call(ctx, args); err != nil {
			b.Fatal(err)
		}
		*into = append(*into, time.Since(start))
	}
	for i := 0; i < 20; i++ { // warm the connection and the caches
		call(goTool, &goTimes)
		call(httpTool, &httpTimes)
	}
	goTimes, httpTimes = goTimes[:0], httpTimes[:0]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call(goTool, &goTimes)
		call(httpTool, &httpTimes)
	}
	b.StopTimer()
	g, h := p50(goTimes), p50(httpTimes)
	b.ReportMetric(float64(g.Microseconds())/1000, "go-p50-ms")
	b.ReportMetric(float64(h.Microseconds())/1000, "http-p50-ms")
	b.ReportMetric(float64((h-g).Microseconds())/1000, "added-p50-ms")
}
