package turnlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/projection"
	"github.com/turnlog/turnlog/turns"
)

// pathsConfig has two apps whose "hold" input runs a tool that waits for the test:
// queue enqueues input for a busy session, refuse (the default) refuses it.
const pathsConfig = `apps:
  queue:
    start_agent: main
    on_busy: enqueue
    llms: &llms
      m:
        provider: scripted
        rules:
          - when: {after_tool: hold}
            reply: held
          - when: {input: '^hold'}
            tools: [{name: hold, arguments: '{}'}]
          - reply: 'said {{input}}'
    tools: &tools
      hold: {timeout: 60s}
    agents: &agents
      main: {llm: m, tools: [hold]}
  refuse:
    start_agent: main
    llms: *llms
    tools: *tools
    agents: *agents
`

// pathsNode is one turnlog serving the API and the inspector, with a hold tool the
// test releases.
type pathsNode struct {
	t       *testing.T
	tl      *turnlog.Turnlog
	srv     *httptest.Server
	entered chan struct{}
	release chan struct{}
}

func openPathsNode(t *testing.T) *pathsNode {
	t.Helper()
	n := &pathsNode{t: t, entered: make(chan struct{}, 8), release: make(chan struct{})}
	hold := functool.MustNew("hold", "waits for the test", func(ctx context.Context, _ noArgs) (any, error) {
		n.entered <- struct{}{}
		select {
		case <-n.release:
			return "released", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	tl, err := turnlog.Open(context.Background(), turnlog.Options{DB: filepath.Join(t.TempDir(), "turnlog.db"),
		ConfigData: []byte(pathsConfig), Functions: turnlog.Functions{"hold": hold}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	h, stop := tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k-alice": "alice"}})
	n.tl, n.srv = tl, httptest.NewServer(h)
	t.Cleanup(n.srv.Close)
	t.Cleanup(stop)
	t.Cleanup(func() {
		select {
		case <-n.release:
		default:
			close(n.release)
		}
	})
	return n
}

// sent is what a transport answered a turn request: the HTTP status its code maps to
// (events.HTTPStatus, for the library too), and whether its input was queued.
type sent struct {
	status int
	queued bool
}

// transport sends a turn request of alice's session — input, with an
// Idempotency-Key (or none) — as the background request of its kind: the call
// returns once the turn started or its input was queued.
type transport interface {
	send(session, input, key string) sent
}

// library calls turnlog.Turnlog.Turns, as an embedder does.
type library struct{ n *pathsNode }

func (l library) send(session, input, key string) sent {
	body, _ := json.Marshal(map[string]string{"input": input})
	out, err := l.n.tl.Turns.Run(context.Background(), turns.Request{Session: session, User: "alice", Input: &input, Background: true,
		Key: turns.Key{Value: key, Route: "run " + session, Body: body}})
	if err != nil {
		var te *events.Error
		if !errors.As(err, &te) {
			l.n.t.Fatalf("library: an untyped error: %v", err)
		}
		return sent{status: events.HTTPStatus(te.Code)}
	}
	defer out.Close()
	return sent{status: http.StatusOK, queued: out.Kind == turns.Queued}
}

// rest is POST /v1/sessions/{id}/turns with background.
type rest struct{ n *pathsNode }

func (r rest) send(session, input, key string) sent {
	body, _ := json.Marshal(map[string]any{"input": input, "background": true})
	req, _ := http.NewRequest("POST", r.n.srv.URL+"/v1/sessions/"+session+"/turns", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer k-alice")
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.n.t.Fatal(err)
	}
	defer res.Body.Close()
	var got struct {
		Status string `json:"status"`
	}
	raw, _ := io.ReadAll(res.Body)
	json.Unmarshal(raw, &got)
	if res.StatusCode == http.StatusAccepted {
		return sent{status: http.StatusOK, queued: got.Status == "queued"}
	}
	return sent{status: res.StatusCode}
}

// inspector signs in as alice and sends the session page's run form; key is the
// form's key field as the page wrote it (the same page's form sent twice carries the
// same key).
type inspectorForms struct {
	n    *pathsNode
	c    *http.Client
	mu   sync.Mutex
	keys map[string]string // the key a test names → the key a page gave for it
}

func newInspectorForms(n *pathsNode) *inspectorForms {
	jar, _ := cookiejar.New(nil)
	f := &inspectorForms{n: n, keys: map[string]string{},
		c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	res, err := f.c.PostForm(n.srv.URL+"/ui/signin", url.Values{"key": {"k-alice"}, "next": {"/ui/"}})
	if err != nil || res.StatusCode != http.StatusSeeOther {
		n.t.Fatalf("sign in: %v %v", res, err)
	}
	res.Body.Close()
	return f
}

var (
	pageCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	runKey   = regexp.MustCompile(`action="/ui/sessions/[^"]+/turns" class="input">\s*<input type="hidden" name="csrf" value="[^"]+"><input type="hidden" name="key" value="([^"]+)">`)
)

func (f *inspectorForms) send(session, input, key string) sent {
	res, err := f.c.Get(f.n.srv.URL + "/ui/sessions/" + session)
	if err != nil {
		f.n.t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	csrf, formKey := pageCSRF.FindSubmatch(page), runKey.FindSubmatch(page)
	if csrf == nil || formKey == nil {
		f.n.t.Fatalf("the session page has no run form with a token and a key: %.600s", page)
	}
	form := url.Values{"input": {input}, "csrf": {string(csrf[1])}}
	if key != "" {
		f.mu.Lock()
		if f.keys[key] == "" { // the first sending of this form: the key its page gave
			f.keys[key] = string(formKey[1])
		}
		form.Set("key", f.keys[key])
		f.mu.Unlock()
	}
	res, err = f.c.PostForm(f.n.srv.URL+"/ui/sessions/"+session+"/turns", form)
	if err != nil {
		f.n.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusSeeOther {
		// The page does not say whether the input was queued: the log does.
		q, _ := f.n.tl.Engine.Queue(context.Background(), session)
		return sent{status: http.StatusOK, queued: len(q) > 0}
	}
	return sent{status: res.StatusCode}
}

// TestOneApplicationPathForTurns: the rules of a turn request — a key acts once, even
// sent twice at once; the same key with another input is refused; a busy session
// queues or refuses input as its app's on_busy says; a background request returns
// while its turn runs — are the same through the Go library, the REST API and the
// inspector's forms. Each case is checked against the log.
func TestOneApplicationPathForTurns(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"library", "rest", "inspector"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			n := openPathsNode(t)
			var tr transport
			switch kind {
			case "library":
				tr = library{n}
			case "rest":
				tr = rest{n}
			default:
				tr = newInspectorForms(n)
			}
			ctx := context.Background()
			newSession := func(app string) string {
				s, err := n.tl.Engine.CreateSession(ctx, app, "alice", nil)
				if err != nil {
					t.Fatal(err)
				}
				return s.ID
			}
			turnsOf := func(session string) []projection.Turn {
				ts, err := n.tl.Store.Turns(ctx, session)
				if err != nil {
					t.Fatal(err)
				}
				return ts
			}
			entered := func() {
				select {
				case <-n.entered:
				case <-time.After(30 * time.Second):
					t.Fatal("the hold tool was never called")
				}
			}

			// A request sent twice at once with its key acts once, while its turn runs
			// (a background request returns before its turn ends).
			s1 := newSession("refuse")
			var wg sync.WaitGroup
			answers := make([]sent, 2)
			for i := range answers {
				wg.Add(1)
				go func() { defer wg.Done(); answers[i] = tr.send(s1, "hold on", "double") }()
			}
			wg.Wait()
			entered()
			if answers[0].status != http.StatusOK || answers[1].status != http.StatusOK {
				t.Fatalf("a keyed request sent twice: %+v", answers)
			}
			if ts := turnsOf(s1); len(ts) != 1 || ts[0].Status != projection.TurnRunning {
				t.Fatalf("sent twice, the log has %+v: one running turn expected", ts)
			}
			// Sent again once more while it runs: the same turn still.
			if a := tr.send(s1, "hold on", "double"); a.status != http.StatusOK || len(turnsOf(s1)) != 1 {
				t.Fatalf("a third sending: %+v, turns %+v", a, turnsOf(s1))
			}
			// The same key with another input is refused and changes nothing.
			if a := tr.send(s1, "something else", "double"); a.status != http.StatusUnprocessableEntity {
				t.Fatalf("the key with another input: %+v, want 422", a)
			}
			// The refuse app refuses input for its busy session.
			if a := tr.send(s1, "next", ""); a.status != http.StatusConflict {
				t.Fatalf("input for a busy session of an app that refuses: %+v, want 409", a)
			}
			if ts := turnsOf(s1); len(ts) != 1 {
				t.Fatalf("refused requests made turns: %+v", ts)
			}
			n.release <- struct{}{}
			waitEnded(t, n, s1, 1)

			// The queue app queues input for its busy session; it runs after.
			s2 := newSession("queue")
			if a := tr.send(s2, "hold", ""); a.status != http.StatusOK || a.queued {
				t.Fatalf("the first input: %+v", a)
			}
			entered()
			if a := tr.send(s2, "next", ""); a.status != http.StatusOK || !a.queued {
				t.Fatalf("input for a busy session of an app that enqueues: %+v, want queued", a)
			}
			if ts := turnsOf(s2); len(ts) != 1 {
				t.Fatalf("the queued input started a turn while the first runs: %+v", ts)
			}
			n.release <- struct{}{}
			ts := waitEnded(t, n, s2, 2)
			if ts[0].Input != "hold" || ts[1].Input != "next" || ts[1].Status != projection.TurnCompleted {
				t.Fatalf("the queued input, after the first: %+v", ts)
			}
		})
	}
}

// waitEnded waits until session has want turns, none running, and returns them.
func waitEnded(t *testing.T, n *pathsNode, session string, want int) []projection.Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wake, stop := n.tl.Store.Watch(session)
	defer stop()
	for {
		ts, err := n.tl.Store.Turns(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		running := false
		for _, tu := range ts {
			running = running || tu.Status == projection.TurnRunning
		}
		if len(ts) == want && !running {
			return ts
		}
		select {
		case <-wake:
		case <-ctx.Done():
			t.Fatalf("%s: turns %s", session, fmt.Sprint(ts))
		}
	}
}
