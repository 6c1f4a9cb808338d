package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/pkg/turnlog/turnlogtest"
)

// benchServer serves the demo app in dev mode over loopback on a durable store that
// lives as long as the benchmark.
func benchServer(b *testing.B) (*sqlite.Store, *httptest.Server) {
	store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	apps, err := turnlogtest.LoadApps(b, "demo", demo.Config, turnlog.Options{Functions: demo.Functions()})
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	e, err := fsm.New(store, apps, fsm.Options{Clock: time.Now, NewID: func() string { return fmt.Sprintf("id%08d", n.Add(1)) }})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: e, Reader: store, Idempotency: store, Dev: true}).Handler())
	b.Cleanup(srv.Close)
	return store, srv
}

// BenchmarkIdempotentReplay repeats a finished demo turn's request with its
// Idempotency-Key: answered from the log, nothing runs (target: at most 1 ms at p50).
// The same run's first turn is the baseline.
func BenchmarkIdempotentReplay(b *testing.B) {
	_, srv := benchServer(b)
	client := &http.Client{}
	post := func(path, key, body string) (string, time.Duration) {
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		t0 := time.Now()
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 300 {
			b.Fatalf("%s: %d %s", path, res.StatusCode, raw)
		}
		return string(raw), time.Since(t0)
	}
	raw, _ := post("/v1/sessions", "", `{"app":"demo"}`)
	id := raw[strings.Index(raw, `"id":"`)+6:][:10]
	path := "/v1/sessions/" + id + "/turns"
	var live []time.Duration
	for i := 0; i < 20; i++ { // live turns, each its own key: the baseline
		_, d := post(path, fmt.Sprintf("live-%d", i), `{"input":"where is order 42?"}`)
		live = append(live, d)
	}
	first, _ := post(path, "replayed", `{"input":"where is order 42?"}`)
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		again, d := post(path, "replayed", `{"input":"where is order 42?"}`)
		if again != first {
			b.Fatalf("a replay answered %s, the turn %s", again, first)
		}
		took = append(took, d)
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	sort.Slice(live, func(i, j int) bool { return live[i] < live[j] })
	b.ReportMetric(float64(took[len(took)/2])/1e6, "replay-p50-ms")
	b.ReportMetric(float64(live[len(live)/2])/1e6, "live-turn-p50-ms")
}

// BenchmarkHTTPTurn runs demo turns (a model call, a tool call, a model call) over
// loopback HTTP against a durable store, from 1 and from 50 sessions at once, and
// reports requests/s, latency percentiles and the database's size per turn; with one
// session, also p50 ÷ the disk's fsync (sampled between the turns). The turns/s of
// the one-session run include the probe's fsyncs; its p50 does not.
func BenchmarkHTTPTurn(b *testing.B) {
	for _, sessions := range []int{1, 50} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) {
			store, srv := benchServer(b)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: sessions}}
			post := func(path, body string) (string, error) {
				res, err := client.Post(srv.URL+path, "application/json", strings.NewReader(body))
				if err != nil {
					return "", err
				}
				defer res.Body.Close()
				raw, _ := io.ReadAll(res.Body)
				if res.StatusCode >= 300 {
					return "", fmt.Errorf("%s: %d %s", path, res.StatusCode, raw)
				}
				return string(raw), nil
			}
			ids := make([]string, sessions)
			for i := range ids {
				raw, err := post("/v1/sessions", `{"app":"demo"}`)
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = raw[strings.Index(raw, `"id":"`)+6:][:10]
			}
			per := b.N/sessions + 1
			var mu sync.Mutex
			var took []time.Duration
			var wg sync.WaitGroup
			probe := storetest.NewFsyncProbe(b, b.TempDir())
			b.ResetTimer()
			start := time.Now()
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < per; i++ {
						if sessions == 1 { // between turns: the floor all through the run
							probe.Sample(2)
						}
						t0 := time.Now()
						if _, err := post("/v1/sessions/"+id+"/turns", `{"input":"where is order 42?"}`); err != nil {
							b.Error(err)
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
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(len(took))/elapsed.Seconds(), "turns/s")
			b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100])/1e6, "p99-ms")
			if all, synced := store.Commits(); len(took) > 0 {
				b.ReportMetric(float64(all)/float64(len(took)), "commits/turn")
				b.ReportMetric(float64(synced)/float64(len(took)), "fsyncs/turn")
			}
			if sessions == 1 { // with 50 the probe would share the disk with their commits
				fsync := probe.Median()
				b.ReportMetric(float64(fsync)/1e6, "fsync-ms")
				b.ReportMetric(float64(took[len(took)/2])/float64(fsync), "p50/fsync")
			}
			if st, err := store.Stats(context.Background()); err == nil { // for sizing: what a turn costs on disk
				b.ReportMetric(float64(st.DBBytes+st.WALBytes)/float64(len(took))/1024, "db-KiB/turn")
			}
		})
	}
}

// BenchmarkHTTPApprovalRoundTrip posts "refund order 42" to the demo (the turn
// suspends on issue_refund) and approves it, over loopback HTTP with durable commits,
// on a fresh session and on one whose history holds 4,400 items.
func BenchmarkHTTPApprovalRoundTrip(b *testing.B) {
	for _, turns := range []int{0, 200} {
		b.Run(fmt.Sprintf("history=%d", turns*22), func(b *testing.B) {
			store, srv := benchServer(b)
			post := func(path, body string) string {
				res, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				defer res.Body.Close()
				raw, _ := io.ReadAll(res.Body)
				if res.StatusCode != 200 && res.StatusCode != 201 {
					b.Fatalf("%s: %d %s", path, res.StatusCode, raw)
				}
				return string(raw)
			}
			raw := post("/v1/sessions", `{"app":"demo"}`)
			id := raw[strings.Index(raw, `"id":"`)+6:][:10]
			if turns > 0 {
				seedHistory(b, store, id, turns)
			}
			var took []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				raw := post("/v1/sessions/"+id+"/turns", `{"input":"refund order 42"}`)
				k := strings.Index(raw, `"suspend_payload":{"id":"`)
				if k < 0 {
					b.Fatalf("not suspended: %s", raw)
				}
				interrupt := raw[k+len(`"suspend_payload":{"id":"`):][:24]
				if out := post("/v1/sessions/"+id+"/turns", `{"resume_map":{"`+interrupt+`":{"confirmed":true}}}`); !strings.Contains(out, `"status":"completed"`) {
					b.Fatalf("resume: %s", out)
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100])/1e6, "p99-ms")
		})
	}
}

// seedHistory commits `turns` turns of 22 items each to a demo session directly in
// the log, as a long conversation would have.
func seedHistory(b *testing.B, store *sqlite.Store, session string, turns int) {
	last, err := store.LastSeq(context.Background(), session)
	if err != nil {
		b.Fatal(err)
	}
	var evs []events.Event
	for t := 0; t < turns; t++ {
		turn := fmt.Sprintf("seed%05d", t)
		items := []events.Item{events.UserMessage(fmt.Sprintf("question %d", t))}
		for i := 0; i < 10; i++ {
			call := fmt.Sprintf("c%d_%d", t, i)
			items = append(items, events.Item{Type: events.ItemFunctionCall, CallID: call, Name: "lookup_order", Arguments: []byte(`{"order_id":42}`)},
				events.Item{Type: events.ItemFunctionCallOutput, CallID: call, Output: `{"status":"shipped"}`})
		}
		items = append(items, events.AssistantMessage("support", "answer"))
		evs = append(evs, events.MustNew(turn, "", &events.TurnStarted{Input: items[0].Content, Agent: "support"}),
			events.MustNew(turn, "", &events.TurnCommitted{Items: items, Agent: "support", Output: "answer"}))
	}
	if _, err := store.Append(context.Background(), session, last, evs); err != nil {
		b.Fatal(err)
	}
}
