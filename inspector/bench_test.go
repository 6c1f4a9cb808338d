package inspector_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// BenchmarkSessionPage renders the page of a session of 4,400 items (44 turns of
// 100): its newest TranscriptPage items, its turns and its questions. It reports the
// p50 and p95 of one render, next to the session list's.
func BenchmarkSessionPage(b *testing.B) {
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: filepath.Join(b.TempDir(), "turnlog.db"), ConfigData: demo.Config, Functions: demo.Functions(), Synchronous: "OFF"})
	if err != nil {
		b.Fatal(err)
	}
	defer tl.Close()
	sid := bulkSession(b, tl, "dev", 44)
	h, stop := tl.Handler(turnlog.ServeOptions{Dev: true})
	defer stop()
	get := func(path string) time.Duration {
		req := httptest.NewRequest("GET", path, nil)
		req.Host = "127.0.0.1"
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		d := time.Since(start)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String()[:200])
		}
		return d
	}
	if body := httptest.NewRecorder(); true {
		req := httptest.NewRequest("GET", "/ui/sessions/"+sid, nil)
		req.Host = "127.0.0.1"
		h.ServeHTTP(body, req)
		if !strings.Contains(body.Body.String(), "Items 4200–4400 of 4400") {
			b.Fatalf("the page is not the newest 200 items: %.300s", body.Body.String())
		}
	}
	var page, list []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		page = append(page, get("/ui/sessions/"+sid))
		list = append(list, get("/ui/"))
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) float64 {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return float64(ds[int(float64(len(ds)-1)*p)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(page, .5), "page-p50-ms")
	b.ReportMetric(pct(page, .95), "page-p95-ms")
	b.ReportMetric(pct(list, .5), "list-p50-ms")
}
