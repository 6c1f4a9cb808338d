package systemtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// nestingAttackers is how many clients send nesting attacks at once.
const nestingAttackers = 8

// TestNestingAttacksCostNoMoreThanTheirSize: a real turnlog with API keys, sent
// bodies just under the 1 MiB limit nested as deep as they go — in every JSON field
// of every JSON route, by 8 clients at once, three rounds — answers each 400
// naming the field within 100 ms (its own request metrics say), and its peak resident memory (VmHWM, reset when
// idle) grows by no more than 8 × the body limit + 64 MiB. A session made before
// still answers.
func TestNestingAttacksCostNoMoreThanTheirSize(t *testing.T) {
	base, cmd := serveWithKey(t)
	pid := cmd.Process.Pid
	addr := strings.TrimPrefix(base, "http://")
	call := func(method, path, body string) (int, string, time.Duration) {
		status, raw, took, err := postRaw(nil, addr, method, path, body)
		if err != nil {
			t.Error(err)
		}
		return status, raw, took
	}
	status, raw, _ := call("POST", "/v1/sessions", `{"app":"demo"}`)
	var sess struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(raw), &sess) != nil {
		t.Fatalf("create a session: %d %s", status, raw)
	}
	if status, raw, _ := call("POST", "/v1/sessions/"+sess.ID+"/turns", `{"input":"hello"}`); status != http.StatusOK {
		t.Fatalf("a turn: %d %s", status, raw)
	}
	idle := procStatusKB(t, pid, "VmRSS")
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak resident memory: %v", err)
	}

	const limit = 1_000_000 // "1M", as echo counts
	deep := func(prefix, open, suffix string) string { return nestedBody(limit, prefix, open, suffix) }
	attacks := []struct{ method, path, body, field string }{
		{"POST", "/v1/sessions", deep(`{"app":"demo","metadata":`, "[", "1"), "metadata"},
		{"POST", "/v1/sessions", deep(`{"app":"demo","metadata":{"a":`, `{"a":`, "1"), "metadata.a"},
		{"POST", "/v1/sessions/" + sess.ID + "/turns", deep(`{"input":"x","resume_map":`, `{"b":`, ""), "resume_map"},
		{"POST", "/v1/sessions/" + sess.ID + "/turns", deep(``, "[", ""), "[0]"},
		{"POST", "/v1/sessions/" + sess.ID + "/branches", deep(`{"metadata":`, `[{"c":`, ""), "metadata"},
		{"POST", "/v1/sessions/" + sess.ID + "/compact", deep(`{"x":`, "[", ""), "x"},
	}
	var mu sync.Mutex
	var slowest time.Duration
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		for i := 0; i < nestingAttackers; i++ {
			a := attacks[(round*nestingAttackers+i)%len(attacks)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, raw, took := call(a.method, a.path, a.body)
				var e struct {
					Error struct{ Code, Message string }
				}
				_ = json.Unmarshal([]byte(raw), &e)
				if status != http.StatusBadRequest || e.Error.Code != "invalid" || !strings.HasPrefix(e.Error.Message, a.field) ||
					!strings.Contains(e.Error.Message, "nested deeper than 64") {
					t.Errorf("%s %s: %d %.200s, want 400 invalid naming %s", a.method, a.path, status, raw, a.field)
				}
				mu.Lock()
				slowest = max(slowest, took)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	peak := procStatusKB(t, pid, "VmHWM")
	grew := (peak - idle) << 10
	t.Logf("idle %d KiB, peak %d KiB under %d attackers: grew %d MiB; slowest answer %s after the body's last byte", idle, peak, nestingAttackers, grew>>20, slowest)
	if bound := int64(nestingAttackers*limit + 64<<20); grew > bound {
		t.Errorf("resident memory grew by %d MiB, want at most %d MiB", grew>>20, bound>>20)
	}
	// The server's own time for each, from its request metrics: within 100 ms.
	within, all := answered400(t, base)
	if all != 3*nestingAttackers || within != all {
		t.Errorf("the server answered %d requests 400, %d of them within 100ms; want %d, all", all, within, 3*nestingAttackers)
	}
	if status, raw, _ := call("GET", "/v1/sessions/"+sess.ID, ""); status != http.StatusOK {
		t.Fatalf("the session after the attacks: %d %s", status, raw)
	}
}

// answered400 reads the server's request metrics: how many requests it answered
// 400 within 100 ms, and how many in all.
func answered400(t *testing.T, base string) (within, all int) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/metrics", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "turnlog_http_request_seconds_") || !strings.Contains(line, `status="400"`) {
			continue
		}
		fields := strings.Fields(line)
		n, _ := strconv.Atoi(fields[len(fields)-1])
		switch {
		case strings.HasPrefix(line, "turnlog_http_request_seconds_bucket") && strings.Contains(line, `le="0.1"`):
			within += n
		case strings.HasPrefix(line, "turnlog_http_request_seconds_count"):
			all += n
		}
	}
	return within, all
}

// procStatusKB reads one kB field of /proc/<pid>/status.
func procStatusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if name, rest, ok := strings.Cut(string(line), ":"); ok && name == field {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
