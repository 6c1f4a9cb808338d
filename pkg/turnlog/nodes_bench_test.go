package turnlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// BenchmarkHTTPTurnsByNodes: 50 sessions take the demo's turns over HTTP (a model
// call, a lookup, a model call: four durable commits each) on one node on a SQLite
// file (the baseline), then one and three nodes on one PostgreSQL database: with
// three, each turn goes to the next node (round-robin: every turn moves its session's
// lease and cache), or each session stays on one node (sticky, as a load balancer
// with session affinity sends them). Each node is a whole turnlog (engine, store, API) in this
// process, so the three share its two cores with the database, as they would share
// a small machine. Reports turns/s and the turn's p50 latency.
func BenchmarkHTTPTurnsByNodes(b *testing.B) {
	for _, c := range []struct {
		name   string
		nodes  int
		pg     bool
		sticky bool
	}{{"sqlite/nodes=1", 1, false, true}, {"postgres/nodes=1", 1, true, true}, {"postgres/nodes=3/round-robin", 3, true, false},
		{"postgres/nodes=3/sticky", 3, true, true}} {
		b.Run(c.name, func(b *testing.B) {
			db := filepath.Join(b.TempDir(), "turnlog.db")
			if c.pg {
				db = postgres.TestSchemaDSN(b)
			}
			var urls []string
			var stores []*postgres.Store
			for range c.nodes {
				url, tl := benchNode(b, db)
				urls = append(urls, url)
				if s, ok := tl.Store.(*postgres.Store); ok {
					stores = append(stores, s)
				}
			}
			benchTurnsOver(b, urls, 50, c.sticky, func() (trips, notifies int64) {
				for _, s := range stores {
					trips, notifies = trips+s.RoundTrips(), notifies+s.Notifies()
				}
				return trips, notifies
			})
		})
	}
}

// benchNode serves the demo on db over HTTP (dev mode) until the benchmark ends.
func benchNode(b *testing.B, db string) (string, *turnlog.Turnlog) {
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: db, ConfigData: demo.Config, Functions: demo.Functions()})
	if err != nil {
		b.Fatal(err)
	}
	h, stop := tl.Handler(turnlog.ServeOptions{Dev: true})
	srv := httptest.NewServer(h)
	b.Cleanup(func() { stop(); srv.Close(); tl.Close() })
	return srv.URL, tl
}

// benchTurnsOver runs b.N turns over urls from sessions clients; counts, when the
// nodes count what they send their database, gives the round-trips/turn metric (what
// their pools send: what turns wait for) and notifies/turn (what their notifiers send
// the other nodes, off the turns' path).
func benchTurnsOver(b *testing.B, urls []string, sessions int, sticky bool, counts func() (trips, notifies int64)) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions}}
	post := func(url, path, body string) (map[string]any, error) {
		res, err := client.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 {
			return nil, fmt.Errorf("%s: %d %s", path, res.StatusCode, raw)
		}
		var v map[string]any
		return v, json.Unmarshal(raw, &v)
	}
	ids := make([]string, sessions)
	for i := range ids {
		v, err := post(urls[i%len(urls)], "/v1/sessions", `{"app":"demo"}`)
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = v["id"].(string)
	}
	per := b.N/sessions + 1
	var mu sync.Mutex
	var took []time.Duration
	var wg sync.WaitGroup
	b.ResetTimer()
	tripsBefore, notifiesBefore := counts()
	start := time.Now()
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range per {
				t0 := time.Now()
				node := i + n
				if sticky {
					node = i
				}
				v, err := post(urls[node%len(urls)], "/v1/sessions/"+id+"/turns", `{"input":"where is order 42?"}`)
				if err != nil || v["status"] != "completed" {
					b.Errorf("turn: %v %v", v, err)
					return
				}
				mu.Lock()
				took = append(took, time.Since(t0))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(took) == 0 {
		return
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(len(took))/elapsed.Seconds(), "turns/s")
	b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
	if trips, notifies := counts(); trips > tripsBefore {
		b.ReportMetric(float64(trips-tripsBefore)/float64(len(took)), "round-trips/turn")
		b.ReportMetric(float64(notifies-notifiesBefore)/float64(len(took)), "notifies/turn")
	}
}
