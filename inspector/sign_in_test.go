package inspector_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/pkg/turnlog"
)

// TestARemovedKeyEndsItsSignIns: a sign-in lasts only while the key it was made with
// is one of the server's (for the same user): served again without bob's key, on the
// same store, bob's cookie opens nothing, while alice's still does.
func TestARemovedKeyEndsItsSignIns(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	bob, alice := b.browser(), b.browser()
	bob.signIn("k-bob")
	alice.signIn("k-alice")
	h, stop := b.tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k-alice": "alice"}})
	defer stop()
	again := httptest.NewServer(h)
	defer again.Close()
	get := func(w *browser) *http.Response {
		old, _ := url.Parse(b.srv.URL)
		req, _ := http.NewRequest("GET", again.URL+"/ui/", nil)
		for _, c := range w.jar.Cookies(old) {
			req.AddCookie(c)
		}
		res, err := w.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get(bob); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/ui/signin") {
		t.Fatalf("bob's sign-in without his key: %d %v", res.StatusCode, res.Header)
	}
	if res := get(alice); res.StatusCode != http.StatusOK {
		t.Fatalf("alice's sign-in with her key: %d", res.StatusCode)
	}
	// Given to another user, the same key does not carry the old sign-in either.
	h2, stop2 := b.tl.Handler(turnlog.ServeOptions{Keys: map[string]string{"k-alice": "mallory"}})
	defer stop2()
	third := httptest.NewServer(h2)
	defer third.Close()
	again = third
	if res := get(alice); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice's sign-in after her key became mallory's: %d", res.StatusCode)
	}
}

// TestTheLiveStreamEndsAtSignOut: an open live stream is cut once its sign-in is
// revoked; a turn that runs after that is not streamed to it.
func TestTheLiveStreamEndsAtSignOut(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	s, _ := b.session("alice", "where is order 42?")
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	csrf := csrfOf(t, page.body)
	last, _ := b.tl.Store.LastSeq(context.Background(), s.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a stream that never ends fails the test
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.srv.URL+"/ui/sessions/"+s.ID+"/live?after="+itoa(last), nil)
	res, err := w.c.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the live stream: %v %v", res, err)
	}
	defer res.Body.Close()
	if a := w.do("POST", "/ui/signout", url.Values{"csrf": {csrf}}); a.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", a.status)
	}
	if st, err := b.tl.Engine.StartTurn(context.Background(), s.ID, "where is order 7?"); err != nil {
		t.Fatal(err)
	} else {
		st.Wait()
	}
	var got []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() { // ends when the server ends the stream
		if strings.HasPrefix(sc.Text(), "event: ") {
			got = append(got, strings.TrimPrefix(sc.Text(), "event: "))
		}
	}
	if strings.Join(got, ",") != "signed-out" {
		t.Fatalf("after sign-out the stream sent %v", got)
	}
}

// TestPostsBehindATLSProxy: a proxy in front may send another Host than the browser
// used; a form from the public URL's own pages is accepted, one from elsewhere not.
func TestPostsBehindATLSProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, "https://turnlog.example.test", false)
	post := func(origin, site string) int {
		return b.postFrom("/ui/signin", url.Values{"key": {"k-alice"}}, origin, site).StatusCode
	}
	for _, c := range []struct {
		origin, site string
		want         int
	}{
		{"https://turnlog.example.test", "same-origin", http.StatusSeeOther},
		{"https://turnlog.example.test", "", http.StatusSeeOther}, // a browser that sends no Sec-Fetch-Site
		{"https://evil.example", "", http.StatusForbidden},
		{"https://evil.example", "cross-site", http.StatusForbidden},
		{"https://sub.turnlog.example.test", "same-site", http.StatusForbidden},
		{"http://turnlog.example.test", "", http.StatusForbidden}, // not the public URL's scheme
	} {
		if got := post(c.origin, c.site); got != c.want {
			t.Errorf("origin %s, Sec-Fetch-Site %q: %d, want %d", c.origin, c.site, got, c.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// sseEvent is one event of a stream, as a test reads it.
type sseEvent struct{ name, data, id string }

// readSSE reads a stream's events until stop says so or it ends.
func readSSE(t *testing.T, body io.Reader, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || cur.id != "" {
				out = append(out, cur)
				if stop(cur) {
					return out
				}
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		}
	}
	return out
}

// TestTheLiveStreamKeepsTheLogsOrder: an answer's pieces come after the tool result
// they were computed from and before the model call that records them, and pieced
// together they are the recorded answer; each event's id lets a reconnect go on
// after it without showing anything twice.
func TestTheLiveStreamKeepsTheLogsOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	s, _ := b.session("alice")
	w := b.browser()
	w.signIn("k-alice")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func(lastID string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", b.srv.URL+"/ui/sessions/"+s.ID+"/live?after=1", nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		res, err := w.c.Do(req)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("the live stream: %v %v", res, err)
		}
		return res
	}
	res := open("")
	defer res.Body.Close()
	st, err := b.tl.Engine.StartTurn(context.Background(), s.ID, "where is order 42?")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := st.Wait()
	got := readSSE(t, res.Body, func(e sseEvent) bool { return e.name == "end" })
	var text strings.Builder
	resulted, recorded := -1, -1
	for i, e := range got {
		switch {
		case e.name == "step" && strings.Contains(e.data, `"kind":"ToolResulted"`):
			resulted = i
		case e.name == "step" && strings.Contains(e.data, `"kind":"ModelCalled"`) && strings.Contains(e.data, `"path":"support/model/2"`):
			recorded = i
		case e.name == "text":
			if resulted < 0 || recorded >= 0 {
				t.Fatalf("a piece of the answer at %d, the tool result at %d, the recorded answer at %d: %v", i, resulted, recorded, got)
			}
			var d struct{ Text string }
			json.Unmarshal([]byte(e.data), &d)
			text.WriteString(d.Text)
		}
	}
	if text.String() != out.Output || recorded < 0 {
		t.Fatalf("the pieces say %q, the turn %q (recorded at %d)", text.String(), out.Output, recorded)
	}
	// A reconnect after the tool's result goes on from there.
	var after string
	for _, e := range got[resulted:] {
		if e.id != "" {
			after = e.id
			break
		}
	}
	again := open(after)
	defer again.Body.Close()
	first := readSSE(t, again.Body, func(sseEvent) bool { return true })
	want, _ := strconv.ParseInt(after, 10, 64)
	if len(first) != 1 || !strings.Contains(first[0].data, `"seq":`+strconv.FormatInt(want+1, 10)+`,`) {
		t.Fatalf("after Last-Event-ID %s the stream began with %v", after, first)
	}
}
