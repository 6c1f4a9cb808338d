package inspector_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/projection"
)

type bundle struct {
	t   *testing.T
	tl  *turnlog.Turnlog
	srv *httptest.Server
	// answers counts the answer forms that reached the server.
	answers *atomic.Int64
}

// setup serves the demo with keys for alice, bob and an admin, behind publicURL.
func setup(t *testing.T, publicURL string, dev bool) bundle {
	t.Helper()
	return setupConfig(t, demo.Config, publicURL, dev)
}

// setupConfig is setup with another agent.yaml.
func setupConfig(t *testing.T, cfg []byte, publicURL string, dev bool) bundle {
	t.Helper()
	return setupOptions(t, turnlog.Options{ConfigData: cfg}, publicURL, dev)
}

// setupOptions is setup with turnlog's options (the demo's functions, a fresh log).
func setupOptions(t *testing.T, o turnlog.Options, publicURL string, dev bool) bundle {
	t.Helper()
	o.DB = filepath.Join(t.TempDir(), "turnlog.db")
	if o.Functions == nil {
		o.Functions = demo.Functions()
	}
	tl, err := turnlog.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	opts := turnlog.ServeOptions{Keys: map[string]string{"k-alice": "alice", "k-bob": "bob"}, PublicURL: publicURL, Dev: dev}
	if dev {
		opts.Keys = nil
	}
	h, stop := tl.Handler(opts)
	t.Cleanup(stop)
	answers := new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/answers") {
			answers.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return bundle{t: t, tl: tl, srv: srv, answers: answers}
}

// session makes a demo session of owner and runs each input as a turn, in order. It
// returns the session and the last turn's outcome.
func (b bundle) session(owner string, inputs ...string) (projection.Session, *fsm.Result) {
	b.t.Helper()
	return b.sessionOf("demo", owner, inputs...)
}

// sessionOf is session for a session of app.
func (b bundle) sessionOf(app, owner string, inputs ...string) (projection.Session, *fsm.Result) {
	b.t.Helper()
	s, err := b.tl.Engine.CreateSession(context.Background(), app, owner, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	var res *fsm.Result
	for _, input := range inputs {
		res = b.turn(s.ID, input)
	}
	return s, res
}

// turn runs input as a turn of session and returns its outcome.
func (b bundle) turn(session, input string) *fsm.Result {
	b.t.Helper()
	st, err := b.tl.Engine.StartTurn(context.Background(), session, input)
	if err != nil {
		b.t.Fatal(err)
	}
	res, err := st.Wait()
	if err != nil {
		b.t.Fatal(err)
	}
	return res
}

// settled waits until the session's last turn is no longer running (a form post
// starts or resumes a turn and answers at once), woken by each commit.
func (b bundle) settled(session string) {
	b.t.Helper()
	wake, stop := b.tl.Store.Watch(session)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		turn, err := b.tl.Store.LastTurn(ctx, session)
		if err != nil {
			b.t.Fatalf("the session's last turn: %v", err)
		}
		if turn.Status != projection.TurnRunning {
			// Its end is durable a moment before its run lets the session go.
			last, _ := b.tl.Store.LastSeq(ctx, session)
			if err := b.tl.Engine.Settled(ctx, session, turn.ID, last); err != nil {
				b.t.Fatal(err)
			}
			return
		}
		select {
		case <-wake:
		case <-ctx.Done():
			b.t.Fatalf("the turn %s of %s still runs", turn.ID, session)
		}
	}
}

// browser is a client with its own cookies that does not follow redirects.
type browser struct {
	b   bundle
	c   *http.Client
	jar http.CookieJar
}

func (b bundle) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{b: b, jar: jar, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func (w *browser) do(method, path string, form url.Values) answer {
	w.b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, w.b.srv.URL+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := w.c.Do(req)
	if err != nil {
		w.b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, string(raw)}
}

func (w *browser) signIn(key string) {
	w.b.t.Helper()
	if a := w.do("POST", "/ui/signin", url.Values{"key": {key}, "next": {"/ui/"}}); a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui/" {
		w.b.t.Fatalf("sign in: %d %s", a.status, a.body)
	}
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page has no CSRF token: %.400s", page)
	}
	return m[1]
}

// TestSignInWithAnAPIKey: the pages need a sign-in; a key becomes a cookie for /ui/
// only (HttpOnly, SameSite=Strict, Secure behind https), kept in the store — so
// signing out revokes it for every node; the cookie never opens the JSON API.
func TestSignInWithAnAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t, "https://turnlog.example.test", false)
	w := b.browser()
	if a := w.do("GET", "/ui/", nil); a.status != http.StatusSeeOther || !strings.HasPrefix(a.header.Get("Location"), "/ui/signin?next=") {
		t.Fatalf("not signed in: %d %v", a.status, a.header)
	}
	if a := w.do("POST", "/ui/signin", url.Values{"key": {"k-mallory"}}); a.status != http.StatusUnauthorized || !strings.Contains(a.body, "not one this server knows") {
		t.Fatalf("a wrong key: %d %s", a.status, a.body)
	}
	a := w.do("POST", "/ui/signin", url.Values{"key": {"k-alice"}, "next": {"//evil.example/x"}})
	cookie := a.header.Get("Set-Cookie")
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/ui/" {
		t.Fatalf("sign in (an off-site next is not followed): %d %v", a.status, a.header)
	}
	for _, want := range []string{"turnlog_ui=", "Path=/ui/", "HttpOnly", "SameSite=Strict", "Secure"} {
		if !strings.Contains(cookie, want) {
			t.Errorf("cookie %q lacks %s", cookie, want)
		}
	}
	if strings.Contains(cookie, "k-alice") {
		t.Fatal("the cookie holds the API key")
	}
	// The jar keeps Secure cookies for https only: send it by hand from here on.
	value := strings.TrimPrefix(strings.Split(cookie, ";")[0], "turnlog_ui=")
	get := func(path string) answer {
		req, _ := http.NewRequest("GET", b.srv.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "turnlog_ui", Value: value})
		res, err := w.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return answer{res.StatusCode, res.Header, string(raw)}
	}
	page := get("/ui/")
	if page.status != 200 || !strings.Contains(page.body, "signed in as <strong>alice</strong>") {
		t.Fatalf("signed in: %d %.300s", page.status, page.body)
	}
	if csp := page.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("CSP: %q", csp)
	}
	if api := get("/v1/sessions"); api.status != http.StatusUnauthorized {
		t.Fatalf("the cookie opened the JSON API: %d", api.status)
	}
	// Sign out without the form's token is refused; with it, the cookie is dead here
	// and on another node on the same store.
	post := func(form url.Values) answer {
		req, _ := http.NewRequest("POST", b.srv.URL+"/ui/signout", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "turnlog_ui", Value: value})
		res, err := w.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return answer{status: res.StatusCode}
	}
	if a := post(url.Values{}); a.status != http.StatusForbidden {
		t.Fatalf("sign out without CSRF: %d", a.status)
	}
	if a := get("/ui/"); a.status != 200 {
		t.Fatalf("a refused sign-out signed out: %d", a.status)
	}
	if a := post(url.Values{"csrf": {csrfOf(t, page.body)}}); a.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", a.status)
	}
	if a := get("/ui/"); a.status != http.StatusSeeOther {
		t.Fatalf("after sign-out: %d", a.status)
	}
}

// TestPagesShowOnlyYourSessions: the list and a session page are the user's own;
// another's session is a 404 page; waiting sessions come first, marked.
func TestPagesShowOnlyYourSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := context.Background()
	mine, _ := b.tl.Engine.CreateSession(ctx, "demo", "alice", nil)
	waiting, _ := b.tl.Engine.CreateSession(ctx, "demo", "alice", nil)
	theirs, _ := b.tl.Engine.CreateSession(ctx, "demo", "bob", nil)
	for id, input := range map[string]string{mine.ID: "where is order 42?", waiting.ID: "refund order 42"} {
		st, err := b.tl.Engine.StartTurn(ctx, id, input)
		if err != nil {
			t.Fatal(err)
		}
		st.Wait()
	}
	w := b.browser()
	w.signIn("k-alice")
	list := w.do("GET", "/ui/", nil)
	if list.status != 200 || !strings.Contains(list.body, mine.ID) || strings.Contains(list.body, theirs.ID) {
		t.Fatalf("list: %d %.500s", list.status, list.body)
	}
	waitingAt, allAt := strings.Index(list.body, "Waiting for a person"), strings.Index(list.body, "All sessions")
	if waitingAt < 0 || waitingAt > allAt || !strings.Contains(list.body[waitingAt:allAt], waiting.ID) || strings.Contains(list.body[waitingAt:allAt], mine.ID) {
		t.Fatalf("the waiting session is not first: %s", list.body)
	}
	if a := w.do("GET", "/ui/?status=waiting", nil); !strings.Contains(a.body, waiting.ID) || strings.Contains(a.body, mine.ID) {
		t.Fatalf("status=waiting: %s", a.body)
	}
	page := w.do("GET", "/ui/sessions/"+mine.ID, nil)
	if page.status != 200 || !strings.Contains(page.body, "Order 42 is shipped") || !strings.Contains(page.body, "lookup_order") {
		t.Fatalf("session page: %d %.500s", page.status, page.body)
	}
	if a := w.do("GET", "/ui/sessions/"+theirs.ID, nil); a.status != http.StatusNotFound || !strings.Contains(a.body, "no session") {
		t.Fatalf("another user's session: %d %s", a.status, a.body)
	}
	if a := w.do("GET", "/ui/?status=lost", nil); a.status != 400 || !strings.Contains(a.body, "status") {
		t.Fatalf("a bad filter: %d %s", a.status, a.body)
	}
}

// TestRunATurnFromThePage: the input form runs a turn through the engine (with its
// CSRF token; without, nothing runs), and the transcript shows it.
func TestRunATurnFromThePage(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	s, _ := b.tl.Engine.CreateSession(context.Background(), "demo", "alice", nil)
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	if a := w.do("POST", "/ui/sessions/"+s.ID+"/turns", url.Values{"input": {"where is order 42?"}}); a.status != http.StatusForbidden {
		t.Fatalf("without CSRF: %d", a.status)
	}
	if turns, _ := b.tl.Store.Turns(context.Background(), s.ID); len(turns) != 0 {
		t.Fatalf("a refused form ran a turn: %+v", turns)
	}
	a := w.do("POST", "/ui/sessions/"+s.ID+"/turns", url.Values{"input": {"where is order 42?"}, "csrf": {csrfOf(t, page.body)}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("run: %d %s", a.status, a.body)
	}
	b.settled(s.ID)
	if page = w.do("GET", "/ui/sessions/"+s.ID, nil); !strings.Contains(page.body, "Order 42 is shipped") {
		t.Fatalf("after the run: %s", page.body)
	}
}

// TestOutputIsText: a tool output holding script and HTML is shown as text.
func TestOutputIsText(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	s, _ := b.tl.Engine.CreateSession(context.Background(), "demo", "alice", nil)
	st, err := b.tl.Engine.StartTurn(context.Background(), s.ID, `<script>document.title="owned"</script><img src=x onerror=alert(1)>`)
	if err != nil {
		t.Fatal(err)
	}
	st.Wait()
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	if strings.Contains(page.body, "<script>document") || strings.Contains(page.body, "<img src=x") || !strings.Contains(page.body, "&lt;script&gt;") {
		t.Fatalf("the input is not escaped: %s", page.body)
	}
}

// TestDevOpensForLoopbackOnly: --dev needs no sign-in and says so in a banner; a
// request for another Host name is refused.
func TestDevOpensForLoopbackOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, "", true)
	w := b.browser()
	if a := w.do("GET", "/ui/", nil); a.status != 200 || !strings.Contains(a.body, "Development mode") {
		t.Fatalf("dev: %d %.300s", a.status, a.body)
	}
	req, _ := http.NewRequest("GET", b.srv.URL+"/ui/", nil)
	req.Host = "rebound.example.test"
	res, err := w.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("another Host under --dev: %d", res.StatusCode)
	}
}

// TestAnswerQuestions: a refund waits for approval; an edit that fails the tool's
// schema is refused, the page names the field and nothing is recorded; a valid edit
// runs the tool once with it; a rejection's message reaches the model.
func TestAnswerQuestions(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := context.Background()
	s, res := b.session("alice", "refund order 42")
	if res == nil || len(res.Interrupts) != 1 {
		t.Fatalf("suspend: %+v", res)
	}
	id := res.Interrupts[0].ID
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	if !strings.Contains(page.body, "Approve <code>issue_refund</code>?") || !strings.Contains(page.body, `name="choice.`+id+`"`) {
		t.Fatalf("the question: %s", page.body)
	}
	csrf := csrfOf(t, page.body)
	events := func() int {
		evs, _ := b.tl.Store.Events(ctx, s.ID, 0)
		return len(evs)
	}
	before := events()
	bad := w.do("POST", "/ui/sessions/"+s.ID+"/answers", url.Values{"csrf": {csrf}, "choice." + id: {"edit"}, "arguments." + id: {`{"order_id": 0}`}})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "order_id") || !strings.Contains(bad.body, `{&#34;order_id&#34;: 0}`) {
		t.Fatalf("a bad edit: %d %s", bad.status, bad.body)
	}
	if events() != before {
		t.Fatal("a refused edit recorded something")
	}
	if a := w.do("POST", "/ui/sessions/"+s.ID+"/answers", url.Values{"choice." + id: {"approve"}}); a.status != http.StatusForbidden || events() != before {
		t.Fatalf("an answer without CSRF: %d", a.status)
	}
	ok := w.do("POST", "/ui/sessions/"+s.ID+"/answers", url.Values{"csrf": {csrf}, "choice." + id: {"edit"}, "arguments." + id: {`{"order_id": 7}`}})
	if ok.status != http.StatusSeeOther {
		t.Fatalf("a valid edit: %d %s", ok.status, ok.body)
	}
	b.settled(s.ID)
	page = w.do("GET", "/ui/sessions/"+s.ID, nil)
	if !strings.Contains(page.body, "Refunded 12.00 EUR for order 7.") || !strings.Contains(page.body, "edited by <strong>alice</strong>") {
		t.Fatalf("after the edit: %s", page.body)
	}
	// A rejection with a message: the model is told.
	st, _ := b.tl.Engine.StartTurn(ctx, s.ID, "refund order 42")
	res, _ = st.Wait()
	id = res.Interrupts[0].ID
	page = w.do("GET", "/ui/sessions/"+s.ID, nil)
	w.do("POST", "/ui/sessions/"+s.ID+"/answers", url.Values{"csrf": {csrfOf(t, page.body)}, "choice." + id: {"reject"}, "message." + id: {"needs a manager"}})
	b.settled(s.ID)
	if page = w.do("GET", "/ui/sessions/"+s.ID, nil); !strings.Contains(page.body, "needs a manager") {
		t.Fatalf("the rejection: %s", page.body)
	}
}

// TestBranchAuditExport: "branch here" on a committed turn opens the new session,
// whose page names its parent and whose parent lists it; the audit is a table of
// who did what; the session downloads as a fixture.
func TestBranchAuditExport(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := context.Background()
	s, _ := b.session("alice", "where is order 42?", "refund order 42")
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	turns, _ := b.tl.Store.Turns(ctx, s.ID)
	first := turns[0].ID
	if !strings.Contains(page.body, `name="turn" value="`+first+`"`) || strings.Contains(page.body, `name="turn" value="`+turns[1].ID+`"`) {
		t.Fatalf("branch here on committed turns only: %s", page.body)
	}
	a := w.do("POST", "/ui/sessions/"+s.ID+"/branches", url.Values{"csrf": {csrfOf(t, page.body)}, "turn": {first}})
	loc := a.header.Get("Location")
	if a.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/sessions/") {
		t.Fatalf("branch: %d %s", a.status, a.body)
	}
	branch := strings.TrimPrefix(strings.Split(loc, "?")[0], "/ui/sessions/")
	bp := w.do("GET", "/ui/sessions/"+branch, nil)
	if !strings.Contains(bp.body, "branched from <a href=\"/ui/sessions/"+s.ID+"\">") || !strings.Contains(bp.body, "Order 42 is shipped") || strings.Contains(bp.body, "refund order 42") {
		t.Fatalf("the branch holds the prefix up to turn 1 only: %s", bp.body)
	}
	if page = w.do("GET", "/ui/sessions/"+s.ID, nil); !strings.Contains(page.body, `branch <a href="/ui/sessions/`+branch+`">`) ||
		!strings.Contains(page.body, "a branch point: 1 branch<") {
		t.Fatalf("the parent does not list its branch and mark the turn: %s", page.body)
	}
	// A branch of the branch shows the whole line it comes from.
	if _, err := b.tl.Engine.RunTurn(ctx, branch, "where is order 7?"); err != nil {
		t.Fatal(err)
	}
	bturns, _ := b.tl.Store.Turns(ctx, branch)
	grand, err := b.tl.Engine.Branch(ctx, branch, "alice", fsm.BranchPoint{Turn: bturns[len(bturns)-1].ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gp := w.do("GET", "/ui/sessions/"+grand.ID, nil).body
	root, mid := strings.Index(gp, `<li><a href="/ui/sessions/`+s.ID+`">`), strings.Index(gp, `<li><a href="/ui/sessions/`+branch+`">`)
	if root < 0 || mid < root || !strings.Contains(gp, "this session, branched from <a href=\"/ui/sessions/"+branch+"\">") {
		t.Fatalf("the branch of a branch does not show its line: %s", gp)
	}
	audit := w.do("GET", "/ui/sessions/"+s.ID+"/audit", nil)
	if audit.status != 200 || !strings.Contains(audit.body, "<code>lookup_order</code>") || !strings.Contains(audit.body, "<td>result</td>") {
		t.Fatalf("audit: %d %s", audit.status, audit.body)
	}
	dl := w.do("GET", "/ui/sessions/"+s.ID+"/export", nil)
	if dl.status != 200 || !strings.Contains(dl.header.Get("Content-Disposition"), "attachment") || !strings.HasPrefix(dl.body, `{"session":"`+s.ID+`","seq":1,"type":"SessionCreated"`) {
		t.Fatalf("export: %d %v %.200s", dl.status, dl.header, dl.body)
	}
	if a := w.do("GET", "/ui/sessions/"+s.ID+"/export", nil); a.status != 200 {
		t.Fatal(a.status)
	}
	other := b.browser()
	other.signIn("k-bob")
	if a := other.do("GET", "/ui/sessions/"+s.ID+"/export", nil); a.status != http.StatusNotFound {
		t.Fatalf("another user's export: %d", a.status)
	}
}

// upload posts a fixture file to the replay page.
func (w *browser) upload(csrf, name string, content []byte) answer {
	w.b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("csrf", csrf)
	fw, _ := mw.CreateFormFile("fixture", name)
	fw.Write(content)
	mw.Close()
	req, _ := http.NewRequest("POST", w.b.srv.URL+"/ui/replay", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	res, err := w.c.Do(req)
	if err != nil {
		w.b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return answer{res.StatusCode, res.Header, string(raw)}
}

// TestReplayPage: a session of the user's replays whole ("N events match"); the
// bad-changed-request fixture shows its divergence, recorded and now side by side;
// an oversized upload is refused, naming the limit.
func TestReplayPage(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	s, _ := b.session("alice", "where is order 42?")
	w := b.browser()
	w.signIn("k-alice")
	form := w.do("GET", "/ui/replay", nil)
	csrf := csrfOf(t, form.body)
	if !strings.Contains(form.body, `<option value="`+s.ID+`">`) {
		t.Fatalf("the replay form does not offer the session: %s", form.body)
	}
	if sp := w.do("GET", "/ui/sessions/"+s.ID, nil).body; !strings.Contains(sp, `<input type="hidden" name="session" value="`+s.ID+`"><button type="submit">Replay it</button>`) {
		t.Fatalf("the session page has no replay button: %s", sp)
	}
	ok := w.do("POST", "/ui/replay", url.Values{"csrf": {csrf}, "session": {s.ID}})
	if ok.status != 200 || !strings.Contains(ok.body, "7 events match") || strings.Contains(ok.body, "at most  MiB") || !strings.Contains(ok.body, "at most 4 MiB") {
		t.Fatalf("replay of a session: %d %s", ok.status, ok.body)
	}
	bad, err := os.ReadFile(filepath.Join("..", "fixtures", "bad-changed-request", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	d := w.upload(csrf, "events.jsonl", bad)
	if d.status != 200 || !strings.Contains(d.body, "The replay diverges") || !strings.Contains(d.body, "<th scope=\"col\">Recorded</th>") {
		t.Fatalf("the bad fixture: %d %s", d.status, d.body)
	}
	if a := w.upload(csrf, "big.jsonl", bytes.Repeat([]byte("x"), 5<<20)); a.status != http.StatusBadRequest || !strings.Contains(a.body, "MiB") {
		t.Fatalf("an oversized fixture: %d %.300s", a.status, a.body)
	}
	if a := w.upload("", "events.jsonl", bad); a.status != http.StatusForbidden {
		t.Fatalf("a replay without CSRF: %d", a.status)
	}
}

// countedTool counts the calls of a tool.
type countedTool struct {
	fsm.Tool
	calls *atomic.Int64
}

func (c countedTool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	c.calls.Add(1)
	return c.Tool.Call(ctx, args)
}

// TestAForgedUploadRunsNothing: a fixture that records an approval and no result of
// the refund it approved, uploaded to the replay page, diverges at the refund's own
// call, and the refund does not run.
func TestAForgedUploadRunsNothing(t *testing.T) {
	t.Parallel()
	var refunds atomic.Int64
	fns := demo.Functions()
	fns["issue_refund"] = countedTool{fns["issue_refund"], &refunds}
	b := setupOptions(t, turnlog.Options{ConfigData: demo.Config, Functions: fns}, "", false)
	s, res := b.session("alice", "refund order 42")
	yes := true
	st, err := b.tl.Engine.Resume(context.Background(), s.ID, "alice", map[string]fsm.Answer{res.Interrupts[0].ID: {Confirmed: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	st.Wait()
	if refunds.Load() != 1 {
		t.Fatalf("the recording ran %d refunds", refunds.Load())
	}
	recorded, _ := b.tl.Store.Events(context.Background(), s.ID, 0)
	var forged bytes.Buffer
	for _, ev := range recorded {
		line, _ := json.Marshal(ev)
		forged.Write(append(line, '\n'))
		if ev.Type == events.TypeTurnResumed {
			break
		}
	}
	w := b.browser()
	w.signIn("k-alice")
	page := w.upload(csrfOf(t, w.do("GET", "/ui/replay", nil).body), "events.jsonl", forged.Bytes())
	if page.status != 200 || !strings.Contains(page.body, "The replay diverges at <code>support/tool/") || !strings.Contains(page.body, "no result of tool issue_refund") {
		t.Fatalf("the forged fixture: %d %s", page.status, page.body)
	}
	if refunds.Load() != 1 {
		t.Fatalf("the replay ran the refund: %d refunds", refunds.Load())
	}
}

// TestTurnTimeline: a turn's timeline lists its activities in log order — the model
// call with its tokens and request hash, the tool call with its arguments and output
// — and a nested agent's under the call that ran it.
func TestTurnTimeline(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	s, res := b.session("alice", "where is order 42?")
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID+"/turns/"+res.TurnID, nil)
	if page.status != 200 {
		t.Fatalf("timeline: %d %s", page.status, page.body)
	}
	order := []string{"turn started", "model call: ", "request ", "tool call: lookup_order", "result of lookup_order", "turn committed"}
	at := 0
	for _, want := range order {
		i := strings.Index(page.body[at:], want)
		if i < 0 {
			t.Fatalf("the timeline lacks %q after byte %d: %s", want, at, page.body)
		}
		at += i
	}
	// Nested agents: two calls of ask_warehouse run the warehouse agent at once; each
	// run's activities are listed under the call that ran it, in their own order.
	_, res2 := b.session("alice", "check the parcels of orders 42 and 7")
	nested := w.do("GET", "/ui/sessions/"+res2.Session+"/turns/"+res2.TurnID, nil).body
	for call, order := range map[string]string{"call_1_1": "42", "call_1_2": "7"} {
		at := strings.Index(nested, "call "+call+" · runs the agent warehouse")
		if at < 0 {
			t.Fatalf("no call %s of the warehouse agent: %s", call, nested)
		}
		list := nested[at:]
		open := strings.Index(list, `<ol class="nested">`)
		if open < 0 || strings.Contains(list[:open], "<li") {
			t.Fatalf("call %s has no list of its own under it: %s", call, list)
		}
		list = list[open:strings.Index(list, "</ol>")]
		other := map[string]string{"42": "7", "7": "42"}[order]
		if !strings.Contains(list, "model call: scripted-warehouse (agent warehouse)") || !strings.Contains(list, "&#34;order_id&#34;: "+order) ||
			strings.Contains(list, "&#34;order_id&#34;: "+other+"\n") {
			t.Fatalf("under call %s (order %s): %s", call, order, list)
		}
		last := int64(0)
		for _, m := range regexp.MustCompile(`seq (\d+) ·`).FindAllStringSubmatch(list, -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			if n <= last {
				t.Fatalf("under call %s the steps are out of log order: %s", call, list)
			}
			last = n
		}
	}
	if a := w.do("GET", "/ui/sessions/"+s.ID+"/turns/nope", nil); a.status != http.StatusNotFound {
		t.Fatalf("an unknown turn: %d", a.status)
	}
	other := b.browser()
	other.signIn("k-bob")
	if a := other.do("GET", "/ui/sessions/"+s.ID+"/turns/"+res.TurnID, nil); a.status != http.StatusNotFound {
		t.Fatalf("another user's turn: %d", a.status)
	}
}

// TestRejectAReview: a guardrail review rejected with notes from the page: the held
// answer is never shown, the turn fails, and the audit has the decision and notes.
func TestRejectAReview(t *testing.T) {
	t.Parallel()
	b := setupConfig(t, []byte(reviewConfig), "", false)
	s, res := b.session("alice", "show the code")
	if res == nil || len(res.Interrupts) != 1 {
		t.Fatalf("the review: %+v", res)
	}
	id := res.Interrupts[0].ID
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	if !strings.Contains(page.body, "Guardrail review") {
		t.Fatalf("the question: %s", page.body)
	}
	a := w.do("POST", "/ui/sessions/"+s.ID+"/answers", url.Values{"csrf": {csrfOf(t, page.body)}, "choice." + id: {"reject"}, "notes." + id: {"not for customers"}})
	if a.status != http.StatusSeeOther {
		t.Fatalf("reject: %d %s", a.status, a.body)
	}
	b.settled(s.ID)
	turn, _ := b.tl.Store.LastTurn(context.Background(), s.ID)
	page = w.do("GET", "/ui/sessions/"+s.ID, nil)
	if turn.Status != projection.TurnFailed || strings.Contains(page.body, "the refund code is R-77") {
		t.Fatalf("after the rejection: turn %s, page %s", turn.Status, page.body)
	}
	audit := w.do("GET", "/ui/sessions/"+s.ID+"/audit", nil).body
	if !strings.Contains(audit, "not for customers") || !strings.Contains(audit, "reject") {
		t.Fatalf("the audit: %s", audit)
	}
}

// TestAStoppingServerSaysSo: while the server stops, a turn run from the page is
// refused with a page that says so (503), and nothing runs.
func TestAStoppingServerSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	s, _ := b.session("alice")
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	if err := b.tl.Engine.Drain(context.Background()); err != nil { // nothing runs: it returns at once
		t.Fatal(err)
	}
	a := w.do("POST", "/ui/sessions/"+s.ID+"/turns", url.Values{"input": {"where is order 42?"}, "csrf": {csrfOf(t, page.body)}})
	if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "shutting down") {
		t.Fatalf("a turn while stopping: %d %s", a.status, a.body)
	}
	if turns, _ := b.tl.Store.Turns(context.Background(), s.ID); len(turns) != 0 {
		t.Fatalf("a turn ran: %+v", turns)
	}
}

var formKeyRe = regexp.MustCompile(`name="key" value="([^"]+)"`)

// TestAFormSentTwiceActsOnce: each form that acts carries a key of its own; sent
// again (a double click, a resent POST), it is answered as the first was and acts
// no more — an answer resumes the turn once, "branch here" makes one branch.
func TestAFormSentTwiceActsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := context.Background()
	s, res := b.session("alice", "refund order 42")
	id := res.Interrupts[0].ID
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil)
	keys := formKeyRe.FindAllStringSubmatch(page.body, -1)
	if len(keys) < 2 || keys[0][1] == keys[1][1] {
		t.Fatalf("the forms carry no keys of their own: %v", keys)
	}
	form := url.Values{"csrf": {csrfOf(t, page.body)}, "key": {keys[0][1]}, "choice." + id: {"approve"}}
	if a := w.do("POST", "/ui/sessions/"+s.ID+"/answers", form); a.status != http.StatusSeeOther {
		t.Fatalf("the answer: %d %s", a.status, a.body)
	}
	b.settled(s.ID)
	evs, _ := b.tl.Store.Events(ctx, s.ID, 0)
	again := w.do("POST", "/ui/sessions/"+s.ID+"/answers", form)
	if again.status != http.StatusSeeOther || again.header.Get("Location") != "/ui/sessions/"+s.ID+"?done=answered" {
		t.Fatalf("the answer sent again: %d %s", again.status, again.body)
	}
	if after, _ := b.tl.Store.Events(ctx, s.ID, 0); len(after) != len(evs) {
		t.Fatalf("the answer sent again recorded %d events", len(after)-len(evs))
	}
	// Without its key, the same form is a stale one: nothing waits for an answer.
	form.Del("key")
	if a := w.do("POST", "/ui/sessions/"+s.ID+"/answers", form); a.status != http.StatusConflict {
		t.Fatalf("a stale answer: %d", a.status)
	}
	turns, _ := b.tl.Store.Turns(ctx, s.ID)
	page = w.do("GET", "/ui/sessions/"+s.ID, nil)
	branchKey := regexp.MustCompile(`/branches" class="inline"><input type="hidden" name="csrf" value="[^"]+"><input type="hidden" name="key" value="([^"]+)">`).FindStringSubmatch(page.body)
	if branchKey == nil {
		t.Fatalf("no branch form with a key: %s", page.body)
	}
	branch := url.Values{"csrf": {csrfOf(t, page.body)}, "key": {branchKey[1]}, "turn": {turns[0].ID}}
	first := w.do("POST", "/ui/sessions/"+s.ID+"/branches", branch)
	second := w.do("POST", "/ui/sessions/"+s.ID+"/branches", branch)
	if first.status != http.StatusSeeOther || second.header.Get("Location") != first.header.Get("Location") {
		t.Fatalf("branch here sent twice: %d %q, then %d %q", first.status, first.header.Get("Location"), second.status, second.header.Get("Location"))
	}
	if br, _ := b.tl.Store.Branches(ctx, s.ID); len(br) != 1 {
		t.Fatalf("branch here sent twice made %d branches", len(br))
	}
}

// TestARecoveredTurnShowsItsCrash: a turn whose process went away (its log stops after
// TurnStarted) is recovered; the timeline shows the recovery as a step — the attempt,
// what was reused — and the audit lists it.
func TestARecoveredTurnShowsItsCrash(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := context.Background()
	s, res := b.session("alice", "where is order 42?")
	evs, err := b.tl.Store.Events(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	crashed := events.MustNew("t_crashed", "", &events.TurnStarted{Input: "where is order 7?", Agent: "support"})
	crashed.Session = s.ID
	if _, err := b.tl.Store.Append(ctx, s.ID, evs[len(evs)-1].Seq, []events.Event{crashed}); err != nil {
		t.Fatal(err)
	}
	results, err := b.tl.Engine.Recover(ctx)
	if err != nil || len(results) != 1 || results[0].Status != fsm.StatusCompleted {
		t.Fatalf("recover: %v %+v", err, results)
	}
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID+"/turns/t_crashed", nil)
	if page.status != 200 || !strings.Contains(page.body, "recovered after a crash: attempt 2") || !strings.Contains(page.body, "0 recorded activities reused") ||
		!strings.Contains(page.body, "kind-TurnRecovered") {
		t.Fatalf("the timeline does not show the recovery: %d %s", page.status, page.body)
	}
	if at := strings.Index(page.body, "recovered after a crash"); at < strings.Index(page.body, "turn started") || at > strings.Index(page.body, "model call: ") {
		t.Errorf("the recovery is not between the turn's start and what the recovered run did")
	}
	audit := w.do("GET", "/ui/sessions/"+s.ID+"/audit", nil)
	if !strings.Contains(audit.body, "recovery") || !strings.Contains(audit.body, "attempt 2") {
		t.Fatalf("the audit does not list the recovery: %s", audit.body)
	}
	if other := w.do("GET", "/ui/sessions/"+s.ID+"/turns/"+res.TurnID, nil); strings.Contains(other.body, "recovered after a crash") {
		t.Errorf("a turn that never crashed shows a recovery")
	}
}

const planAppYAML = `apps:
  work:
    start_agent: planner
    llms:
      m:
        provider: scripted
        rules:
          - {when: {after_tool: update_plan}, reply: "planned"}
          - {when: {input: '^start'}, tools: [{name: update_plan, arguments: '{"goal": "ship <it>", "items": [{"text": "build", "status": "done"}, {"text": "test", "status": "in_progress"}, {"text": "release", "status": "pending"}]}'}]}
    agents:
      planner: {llm: m, tools: [update_plan]}
`

// TestThePlanPanel: a session whose agent keeps a plan shows it — the goal, each step
// with its status, the turn that set it; one without shows no panel.
func TestThePlanPanel(t *testing.T) {
	t.Parallel()
	b := setupConfig(t, []byte(planAppYAML), "", false)
	s, _ := b.sessionOf("work", "alice", "start")
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/sessions/"+s.ID, nil).body
	panel, _, _ := strings.Cut(page[strings.Index(page, `<section aria-labelledby="plan-h"`)+1:], "</section>")
	for _, want := range []string{"ship &lt;it&gt;", `<li class="plan-done"><span class="status">done</span> build</li>`,
		`<li class="plan-in_progress"><span class="status">in progress</span> test</li>`, `<li class="plan-pending"><span class="status">pending</span> release</li>`, "Set by <a href="} {
		if !strings.Contains(panel, want) {
			t.Fatalf("the plan panel lacks %q:\n%s", want, panel)
		}
	}
	empty, _ := b.sessionOf("work", "alice")
	if strings.Contains(w.do("GET", "/ui/sessions/"+empty.ID, nil).body, `id="plan-h"`) {
		t.Fatal("a session without a plan shows a plan panel")
	}
}
