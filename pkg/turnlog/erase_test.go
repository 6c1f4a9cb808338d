package turnlog_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/projection"
)

const eraseConfig = `apps:
  keep:
    start_agent: main
    llms:
      m:
        provider: scripted
        rules:
          - {when: {after_tool: "*"}, reply: "noted"}
          - {when: {input: '^remember'}, tools: [{name: memory_save, arguments: '{"text": "MEMORY_TOKEN likes green tea"}'}]}
          - {when: {input: '^look'}, tools: [{name: lookup, arguments: '{}'}, {name: big, arguments: '{}'}]}
          - {when: {input: '^report'}, tools: [{name: big, arguments: '{}'}]}
          - {when: {input: '^refund'}, tools: [{name: refund, arguments: '{}'}]}
          - {when: {input: '^slow'}, tools: [{name: slow, arguments: '{}'}]}
          - {when: {input: '.'}, reply: "ok"}
    tools:
      lookup: {function: lookup}
      big: {function: big}
      refund: {function: refund, needs_approval: true}
      slow: {function: slow}
    agents:
      main: {llm: m, tools: [lookup, big, refund, slow], memory: true}
    webhooks:
      w: {url: "http://127.0.0.1:1/hook", secret_env: ERASE_HOOK_SECRET}
`

// plantWord is a word found nowhere else: lower case (as FTS5 keeps words), ending in
// digits (so no stemmer shortens it).
func plantWord(t *testing.T, prefix string) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "zq" + hex.EncodeToString(b) + "07"
}

// filesHold says which of the database's files hold word, in any case.
func filesHold(t *testing.T, db, word string) []string {
	t.Helper()
	var in []string
	for _, f := range []string{db, db + "-wal", db + "-shm", db + "-journal"} {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(bytes.ToLower(b), []byte(word)) {
			in = append(in, filepath.Base(f))
		}
	}
	return in
}

type apiClient struct {
	t   *testing.T
	url string
}

func (a apiClient) do(method, path, key string, body string, header ...string) (int, string) {
	a.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, a.url+path, r)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEraseLeavesNoByteBehind plants words in a person's message, a tool's output
// and a memory, erases the session over the API, and searches the database file
// and its WAL for them; another user's session keeps its own, until that user is
// erased too.
func TestEraseLeavesNoByteBehind(t *testing.T) {
	t.Setenv("ERASE_HOOK_SECRET", "0123456789abcdef0123")
	said, toolSaid, remembered, shared := plantWord(t, "said"), plantWord(t, "tool"), plantWord(t, "mem"), plantWord(t, "shared")
	fns, gate, entered := refundAndSlow()
	for name, fn := range map[string]fsm.Tool{
		"lookup": functool.MustNew("lookup", "looks up the order", func(context.Context, struct{}) (any, error) {
			return "order of " + toolSaid + " shipped", nil
		}),
		"big": functool.MustNew("big", "a big report", func(context.Context, struct{}) (any, error) {
			return strings.Repeat("report "+shared+" ", 8000), nil // past the blob threshold
		}),
	} {
		fns[name] = fn
	}
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "t.db")
	tl, err := turnlog.Open(ctx, turnlog.Options{DB: db, ConfigData: []byte(strings.ReplaceAll(eraseConfig, "MEMORY_TOKEN", remembered)), Functions: fns})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	h, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"ka": "alice", "kb": "bob", "kadmin": "root"}, AdminKeys: map[string]bool{"kadmin": true}})
	defer stop()
	srv := httptest.NewServer(h)
	defer srv.Close()
	api := apiClient{t, srv.URL}
	run := func(session, input string) *fsm.Result { t.Helper(); return runTurn(t, tl, session, input) }

	code, body := api.do("POST", "/v1/sessions", "ka", `{"app": "keep"}`, "Idempotency-Key", "create-1")
	var a projection.Session
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &a) != nil {
		t.Fatalf("create: %d %s", code, body)
	}
	run(a.ID, "remember "+said)
	looked := run(a.ID, "look "+said)
	branch, err := tl.Engine.Branch(ctx, a.ID, "alice", fsm.BranchPoint{Turn: looked.TurnID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := run(a.ID, "refund "+said); res.Status != "suspended" {
		t.Fatalf("refund: %+v", res)
	}
	b, _ := tl.Engine.CreateSession(ctx, "keep", "bob", nil)
	run(b.ID, "report")
	for _, w := range []string{said, toolSaid, remembered, shared} {
		if len(filesHold(t, db, w)) == 0 {
			t.Fatalf("%s is in no file before the erasure: the search finds nothing", w)
		}
	}

	slow, err := tl.Engine.StartTurn(ctx, branch.ID, "slow")
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	if code, body := api.do("DELETE", "/v1/sessions/"+a.ID+"?cascade=true", "ka", ""); code != http.StatusConflict || !strings.Contains(body, "running") {
		t.Fatalf("erase with a branch's turn running: %d %s", code, body)
	}
	close(gate)
	slow.Wait()
	settle(t, tl, branch.ID)
	if code, body := api.do("DELETE", "/v1/sessions/"+a.ID, "ka", ""); code != http.StatusConflict || !strings.Contains(body, "cascade=true") {
		t.Fatalf("erase a session with branches: %d %s", code, body)
	}
	if code, body := api.do("DELETE", "/v1/sessions/"+a.ID+"?cascade=maybe", "ka", ""); code != http.StatusBadRequest || !strings.Contains(body, "cascade") {
		t.Fatalf("cascade=maybe: %d %s", code, body)
	}
	if code, _ := api.do("DELETE", "/v1/sessions/"+a.ID+"?cascade=true", "kb", ""); code != http.StatusNotFound {
		t.Fatalf("another user erases alice's session: %d", code)
	}

	code, body = api.do("DELETE", "/v1/sessions/"+a.ID+"?cascade=true", "ka", "")
	var rec projection.ErasureReceipt
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rec) != nil {
		t.Fatalf("erase: %d %s", code, body)
	}
	c := rec.Counts
	if rec.Kind != "session" || rec.Subject != a.ID || rec.By != "alice" || len(rec.Sessions) != 2 || c.Sessions != 2 ||
		c.SuspendedTurns != 1 || c.Turns != 4 || c.Memories != 1 || c.IdempotencyKeys != 1 || c.Deliveries < 4 || c.Events == 0 ||
		c.HistoryItems == 0 || c.Interrupts != 1 || c.Blobs == 0 || rec.Scrubbed == nil || !*rec.Scrubbed {
		t.Fatalf("receipt: %s", body)
	}
	for _, w := range []string{said, toolSaid, remembered} {
		if in := filesHold(t, db, w); len(in) > 0 {
			t.Errorf("%s is still in %v after the erasure", w, in)
		}
		if strings.Contains(body, w) {
			t.Errorf("the receipt holds %s", w)
		}
	}
	if len(filesHold(t, db, shared)) == 0 {
		t.Fatal("bob's report went with alice's session")
	}
	for _, id := range []string{a.ID, branch.ID} {
		if code, _ := api.do("GET", "/v1/sessions/"+id, "ka", ""); code != http.StatusNotFound {
			t.Errorf("GET %s after the erasure: %d", id, code)
		}
	}
	if hits, err := tl.Store.SearchMemory(ctx, "keep", "alice", remembered, 10); err != nil || len(hits) != 0 {
		t.Errorf("memory search after the erasure: %v %v", hits, err)
	}
	if code, body := api.do("GET", "/v1/sessions/"+b.ID+"/history", "kb", ""); code != http.StatusOK || !strings.Contains(body, shared) {
		t.Fatalf("bob's history: %d %.200s", code, body)
	}
	if code, body := api.do("POST", "/v1/sessions", "ka", `{"app": "keep"}`, "Idempotency-Key", "create-1"); code != http.StatusCreated || strings.Contains(body, a.ID) {
		t.Fatalf("the erased session's Idempotency-Key again: %d %s", code, body)
	}

	raw, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{`DELETE FROM events WHERE session_id = '` + b.ID + `'`, `DELETE FROM blobs`, `UPDATE events SET data = '{}'`} {
		if _, err := raw.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v", q, err)
		}
	}

	if code, _ := api.do("DELETE", "/v1/users/bob/data", "ka", ""); code != http.StatusForbidden {
		t.Fatalf("a user's erasure without the admin role: %d", code)
	}
	code, body = api.do("DELETE", "/v1/users/bob/data", "kadmin", "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rec) != nil || rec.Kind != "user" || rec.By != "root" || rec.Counts.Sessions != 1 || rec.Counts.Blobs == 0 {
		t.Fatalf("erase bob: %d %s", code, body)
	}
	if in := filesHold(t, db, shared); len(in) > 0 {
		t.Errorf("bob's report is still in %v", in)
	}
	code, body = api.do("GET", "/v1/erasures", "kadmin", "")
	var page struct{ Erasures []projection.ErasureReceipt }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Erasures) != 2 || page.Erasures[0].Subject != a.ID || page.Erasures[1].Subject != "bob" {
		t.Fatalf("receipts: %d %s", code, body)
	}
}
