package turnlog_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// The scale benchmark's database: TURNLOG_SCALE_SESSIONS sessions (default 10,000) of
// the demo's turns, about 100 events each, so 1M events by default.
const scaleTurnsPerSession = 17

func scaleSessions(b *testing.B) int {
	n := 10000
	if v := os.Getenv("TURNLOG_SCALE_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("TURNLOG_SCALE_SESSIONS=%q", v)
		}
	}
	return n
}

// BenchmarkAtScale measures, on a database of ≥ 1M events over ≥ 10k sessions and on
// one of 10 sessions of the same shape, in the same run: a demo turn's p50 (on a
// session already in memory, and on one that is not), history read p50/p99, the
// first page of the session listing p99, GET …/events?after= p99, start-up (open with
// migrations, then the recovery scan), and rebuild. Each figure
// is reported for both, and as large ÷ small: only rebuild may grow with the
// database. Not part of make test: make bench-scale (a few GB of disk, minutes).
func BenchmarkAtScale(b *testing.B) {
	dir := b.TempDir()
	small, large := filepath.Join(dir, "small.db"), filepath.Join(dir, "large.db")
	template := scaleTemplate(b, filepath.Join(dir, "template.db"))
	built := time.Now()
	fillScale(b, small, template, 10)
	fillScale(b, large, template, scaleSessions(b))
	b.Logf("built the databases in %s (%d events a session)", time.Since(built).Round(time.Second), len(template))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Three passes, small and large in turn, each figure the median of its three:
		// the host's speed drifts within a run, and this keeps it from favouring one.
		var ss, ls []map[string]float64
		for pass := range 3 {
			ss = append(ss, measureScale(b, small, pass == 2))
			ls = append(ls, measureScale(b, large, pass == 2))
		}
		s, l := medianOf(ss), medianOf(ls)
		for _, name := range []string{"turn-p50-ms", "turn-cold-p50-ms", "history-p50-ms", "history-p99-ms", "listing-p99-ms", "events-after-p99-ms", "startup-ms", "rebuild-ms"} {
			b.ReportMetric(s[name], "small-"+name)
			b.ReportMetric(l[name], "large-"+name)
			b.ReportMetric(l[name]/s[name], "large/small-"+name)
		}
		b.ReportMetric(l["events"], "large-events")
	}
}

// scaleTemplate records one session of the demo: scaleTurnsPerSession lookups.
func scaleTemplate(b *testing.B, path string) []events.Event {
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: path, Synchronous: "OFF", ConfigData: demo.Config, Functions: demo.Functions()})
	if err != nil {
		b.Fatal(err)
	}
	defer tl.Close()
	sess, err := tl.Engine.CreateSession(ctx, "demo", "dev", nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range scaleTurnsPerSession {
		if res, err := tl.Engine.RunTurn(ctx, sess.ID, fmt.Sprintf("where is order %d?", 40+i%3)); err != nil || res.Status != fsm.StatusCompleted {
			b.Fatalf("template turn: %+v %v", res, err)
		}
	}
	evs, err := tl.Store.Events(ctx, sess.ID, 0)
	if err != nil {
		b.Fatal(err)
	}
	return evs
}

// fillScale writes n sessions, each the template's events, to a new database.
func fillScale(b *testing.B, path string, template []events.Event, n int) {
	ctx := context.Background()
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: path, Synchronous: "OFF", ConfigData: demo.Config, Functions: demo.Functions()})
	if err != nil {
		b.Fatal(err)
	}
	defer tl.Close()
	work := make(chan int)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for i := range work {
				if _, err := tl.Store.Append(ctx, fmt.Sprintf("scale-%07d", i), 0, template); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	for range 8 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

func percentile(d []time.Duration, p float64) float64 {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[min(int(float64(len(s))*p), len(s)-1)]) / float64(time.Millisecond)
}

// measureScale opens the database at path as a server does and measures it.
// medianOf is each figure's median over passes.
func medianOf(passes []map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name := range passes[len(passes)-1] {
		var v []float64
		for _, p := range passes {
			if x, ok := p[name]; ok {
				v = append(v, x)
			}
		}
		sort.Float64s(v)
		out[name] = v[len(v)/2]
	}
	return out
}

// measureScale measures one database; rebuild, when set, also rebuilds it.
func measureScale(b *testing.B, path string, rebuild bool) map[string]float64 {
	ctx := context.Background()
	out := map[string]float64{}
	var starts []time.Duration
	var tl *turnlog.Turnlog
	for i := range 5 { // start-up five times (one sample moves with the host); the last one stays open
		start := time.Now()
		var err error
		if tl, err = turnlog.Open(ctx, turnlog.Options{DB: path, ConfigData: demo.Config, Functions: demo.Functions()}); err != nil {
			b.Fatal(err)
		}
		if _, err := tl.Engine.Recover(ctx); err != nil {
			b.Fatal(err)
		}
		starts = append(starts, time.Since(start))
		if i < 4 {
			tl.Close()
		}
	}
	defer tl.Close()
	out["startup-ms"] = percentile(starts, 0.5)
	var sessions []string
	for after, afterID := (time.Time{}), ""; ; {
		page, err := tl.Store.SessionPage(ctx, "dev", "demo", after, afterID, 1000)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range page {
			sessions = append(sessions, s.ID)
		}
		if len(page) < 1000 {
			break
		}
		after, afterID = page[len(page)-1].CreatedAt, page[len(page)-1].ID
	}
	pick := func(i int) string { return sessions[(i*7919)%len(sessions)] } // spread over the whole database
	// Enough samples that a p99 is not one stall of the host.
	var history, listing, after, turns []time.Duration
	for i := range 2000 {
		t0 := time.Now()
		if _, err := tl.Store.History(ctx, pick(i)); err != nil {
			b.Fatal(err)
		}
		history = append(history, time.Since(t0))
		t0 = time.Now()
		// A page of 10: as long as the small database holds, so both read the same rows.
		if _, err := tl.Store.SessionPage(ctx, "dev", "demo", time.Time{}, "", 10); err != nil {
			b.Fatal(err)
		}
		listing = append(listing, time.Since(t0))
	}
	h, stop := tl.Handler(turnlog.ServeOptions{Dev: true})
	srv := httptest.NewServer(h)
	defer func() { stop(); srv.Close() }()
	for i := range 1000 {
		t0 := time.Now()
		res, err := http.Get(srv.URL + "/v1/sessions/" + pick(i) + "/events?after=50")
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("events?after: %v %v", res, err)
		}
		res.Body.Close()
		after = append(after, time.Since(t0))
	}
	// Ten sessions spread over the file take a turn each (cold: none is in memory
	// yet), then three more each (warm), in both databases alike.
	var cold []time.Duration
	for i := range 40 {
		t0 := time.Now()
		if res, err := tl.Engine.RunTurn(ctx, pick(i%10), "where is order 42?"); err != nil || res.Status != fsm.StatusCompleted {
			b.Fatalf("turn: %+v %v", res, err)
		}
		if i < 10 {
			cold = append(cold, time.Since(t0))
		} else {
			turns = append(turns, time.Since(t0))
		}
	}
	out["turn-cold-p50-ms"] = percentile(cold, 0.5)
	out["history-p50-ms"], out["history-p99-ms"] = percentile(history, 0.5), percentile(history, 0.99)
	out["listing-p99-ms"] = percentile(listing, 0.99)
	out["events-after-p99-ms"] = percentile(after, 0.99)
	out["turn-p50-ms"] = percentile(turns, 0.5)
	if !rebuild {
		return out
	}
	rebuildStart := time.Now()
	n, err := tl.Store.(interface {
		Rebuild(context.Context) (int64, error)
	}).Rebuild(ctx)
	if err != nil {
		b.Fatal(err)
	}
	out["rebuild-ms"] = float64(time.Since(rebuildStart)) / float64(time.Millisecond)
	out["events"] = float64(n)
	return out
}
