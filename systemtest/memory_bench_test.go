package systemtest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rssMB is a process's resident memory, in MB.
func rssMB(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkServeMemory reports the resident memory of a real `turnlog serve` (the
// binary, on a SQLite file): just started; after 10,000 sessions took a turn each
// and went idle; and with 50 turns running at once (their tool held). The
// conversation cache is bounded (--cache-sessions, 1024 by default), so idle
// sessions past it cost nothing in memory.
func BenchmarkServeMemory(b *testing.B) {
	const idle, running = 10000, 50
	hold := make(chan struct{})
	var holding sync.WaitGroup
	shop := newShopServer(b, func(ref string, _ int) time.Duration {
		if strings.HasPrefix(ref, "held") {
			holding.Done()
			<-hold
		}
		return 0
	})
	dir := b.TempDir()
	cfg, keys := filepath.Join(dir, "agent.yaml"), filepath.Join(dir, "keys")
	os.WriteFile(cfg, []byte(fmt.Sprintf(shopConfig, shop.URL)), 0o600)
	os.WriteFile(keys, []byte("key-alice=alice\n"), 0o600)
	c := newCluster(b, dir, filepath.Join(dir, "turnlog.db"), "--config", cfg, "--api-keys-file", keys, "--synchronous", "OFF")
	for i := 0; i < b.N; i++ {
		n := c.start(0)
		pid := n.cmd.Process.Pid
		started := rssMB(b, pid)
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}
		var wg sync.WaitGroup
		work := make(chan int)
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					status, s := apiCall{"POST", "/v1/sessions", "", map[string]any{"app": "shop"}}.send(client, n.url)
					if status != http.StatusCreated {
						b.Errorf("create: %d %v", status, s)
						return
					}
					if status, res := (apiCall{"POST", "/v1/sessions/" + s["id"].(string) + "/turns", "", map[string]any{"input": fmt.Sprintf("check idle-%d", i)}}).send(client, n.url); status != http.StatusOK {
						b.Errorf("turn: %d %v", status, res)
						return
					}
				}
			}()
		}
		for i := range idle {
			work <- i
		}
		close(work)
		wg.Wait()
		afterIdle := rssMB(b, pid)
		holding.Add(running)
		for i := range running {
			status, s := apiCall{"POST", "/v1/sessions", "", map[string]any{"app": "shop"}}.send(client, n.url)
			if status != http.StatusCreated {
				b.Fatalf("create: %d", status)
			}
			if status, _ := (apiCall{"POST", "/v1/sessions/" + s["id"].(string) + "/turns", "", map[string]any{"input": fmt.Sprintf("check held-%d", i), "background": true}}).send(client, n.url); status != http.StatusAccepted {
				b.Fatalf("background turn: %d", status)
			}
		}
		holding.Wait() // all 50 run, each in its held tool
		withRunning := rssMB(b, pid)
		close(hold)
		b.ReportMetric(started, "rss-started-MB")
		b.ReportMetric(afterIdle, "rss-10k-idle-MB")
		b.ReportMetric(withRunning, "rss-10k-idle-50-running-MB")
		b.ReportMetric(afterIdle/started, "idle/started")
		c.kill(0)
		hold = make(chan struct{})
	}
}
