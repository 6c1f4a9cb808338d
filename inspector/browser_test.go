package inspector_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/examples/demo"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/projection"
)

// oneBrowser lets one Chromium run at a time: on two cores, with the race detector,
// several at once starve each other past their deadlines.
var oneBrowser = make(chan struct{}, 1)

// chromium starts Debian's chromium headless for one test; CI sets
// TURNLOG_REQUIRE_CHROMIUM, and then a missing browser fails the test.
func chromium(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("TURNLOG_REQUIRE_CHROMIUM") != "" {
			t.Fatalf("chromium is needed (apt-get install -y chromium): %v", err)
		}
		t.Skip("chromium is not installed")
	}
	oneBrowser <- struct{}{}
	t.Cleanup(func() { <-oneBrowser })
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1280, 800))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// TestInABrowser drives the inspector in a real Chromium: sign in, the list, a
// session, a turn run from the page, an approval (the tool runs once), another
// user's session (a 404 page), and output holding script shown as text (no script
// runs).
func TestInABrowser(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := chromium(t)
	bg := context.Background()
	s, _ := b.tl.Engine.CreateSession(bg, "demo", "alice", nil)
	theirs, _ := b.tl.Engine.CreateSession(bg, "demo", "bob", nil)
	st, _ := b.tl.Engine.StartTurn(bg, s.ID, `<script>window.owned = 1; document.title = "owned"</script><b>bold?</b>`)
	st.Wait()
	base := b.srv.URL
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.location.href + "\n" + document.getElementById("live").innerText`))
			var types []string
			evs, _ := b.tl.Store.Events(context.Background(), s.ID, 0)
			for _, ev := range evs {
				types = append(types, fmt.Sprint(ev.Seq, ev.Type))
			}
			t.Fatalf("%s: %v\n%s\nlog: %v", what, err, html, types)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	step("sign in",
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), "k-alice"),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`)))
	if list := text("main"); !strings.Contains(list, s.ID) || strings.Contains(list, theirs.ID) {
		t.Fatalf("the list: %s", list)
	}
	step("open the session",
		chromedp.Click(chromedp.CSS(`a[href="/ui/sessions/`+s.ID+`"]`)),
		chromedp.WaitVisible(chromedp.ID("transcript-h")))
	transcript := text(".transcript")
	owned, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.owned === 1`))
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if err != nil || !strings.Contains(transcript, `<script>window.owned = 1;`) || !strings.Contains(transcript, "<b>bold?</b>") || owned || title == "owned" {
		t.Fatalf("script in the transcript ran or was not shown as text: owned=%v (%v) title=%q text=%s", owned, err, title, transcript)
	}

	// A turn from the page, then an approval.
	step("run a turn from the page",
		chromedp.SendKeys(chromedp.ID("input"), "where is order 42?"),
		chromedp.Submit(chromedp.ID("input")),
		chromedp.WaitVisible(chromedp.Search(`//div[contains(., "Order 42 is shipped")]`)))
	step("approve from the page",
		chromedp.SendKeys(chromedp.ID("input"), "refund order 42"),
		chromedp.Submit(chromedp.ID("input")),
		chromedp.WaitVisible(chromedp.ID("pending-h")),
		chromedp.Click(chromedp.CSS(`input[type=radio][value=approve]`)),
		chromedp.Click(chromedp.CSS(`form.answers button[type=submit]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[contains(., "Refunded 58.40 EUR for order 42.")]`)))
	evs, _ := b.tl.Store.Events(bg, s.ID, 0)
	refunds := 0
	for _, ev := range evs {
		if ev.Type == "ToolResulted" && strings.Contains(string(ev.Data), `"tool":"issue_refund"`) {
			refunds++
		}
	}
	if refunds != 1 {
		t.Fatalf("issue_refund ran %d times", refunds)
	}

	// A turn that runs while the page is open shows without a reload by hand.
	watched, _ := b.tl.Engine.CreateSession(bg, "demo", "alice", nil)
	// (The page follows from the seq it was rendered at, so a turn that starts
	// before its stream connects is seen all the same.)
	step("open a session to watch", chromedp.Navigate(base+"/ui/sessions/"+watched.ID), chromedp.WaitVisible(chromedp.ID("transcript-h")))
	if st, err := b.tl.Engine.StartTurn(bg, watched.ID, "where is order 42?"); err != nil {
		t.Fatal(err)
	} else {
		st.Wait()
	}
	step("the live update", chromedp.WaitVisible(chromedp.Search(`//div[contains(., "Order 42 is shipped")]`)))

	// The replay page shows the divergence of a fixture whose request changed.
	bad, _ := filepath.Abs(filepath.Join("..", "fixtures", "bad-changed-request", "events.jsonl"))
	step("replay a fixture",
		chromedp.Navigate(base+"/ui/replay"),
		chromedp.WaitVisible(chromedp.ID("fixture")),
		chromedp.SetUploadFiles(chromedp.ID("fixture"), []string{bad}),
		chromedp.Click(chromedp.CSS(`form.replay button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("result-h")))
	if result := text(".result"); !strings.Contains(result, "The replay diverges at support/model/1") || !strings.Contains(result, "Recorded") {
		t.Fatalf("the replay page: %s", result)
	}

	// Another user's session is a 404 page, not a blank one.
	step("another user's session", chromedp.Navigate(base+"/ui/sessions/"+theirs.ID), chromedp.WaitVisible(chromedp.CSS(".error")))
	if page := text("main"); !strings.Contains(page, "404") || !strings.Contains(page, "no session") {
		t.Fatalf("another user's session: %s", page)
	}
}

// TestAnswersInABrowser answers from the page: a rejection with a message (the model
// is told it), an edit the tool's schema refuses (the error is shown, nothing runs),
// then a valid edit (the tool runs once, with it); and it branches at turn 1 and sees
// only the prefix.
func TestAnswersInABrowser(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := chromium(t)
	bg := context.Background()
	s, _ := b.session("alice", "where is order 42?")
	base := b.srv.URL
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	refunds := func() int {
		evs, _ := b.tl.Store.Events(bg, s.ID, 0)
		n := 0
		for _, ev := range evs {
			if ev.Type == "ToolResulted" && strings.Contains(string(ev.Data), `"tool":"issue_refund"`) && !strings.Contains(string(ev.Data), `"is_error":true`) {
				n++
			}
		}
		return n
	}
	suspend := func() {
		t.Helper()
		step("ask for a refund",
			chromedp.SendKeys(chromedp.ID("input"), "refund order 42"),
			chromedp.Submit(chromedp.ID("input")),
			chromedp.WaitVisible(chromedp.ID("pending-h")))
	}
	step("sign in and open the session",
		chromedp.Navigate(base+"/ui/signin"),
		chromedp.SendKeys(chromedp.ID("key"), "k-alice"),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`)),
		chromedp.Navigate(base+"/ui/sessions/"+s.ID),
		chromedp.WaitVisible(chromedp.ID("transcript-h")))

	suspend()
	step("reject with a message",
		chromedp.Click(chromedp.CSS(`input[type=radio][value=reject]`)),
		chromedp.SendKeys(chromedp.CSS(`input[id^="message-"]`), "needs a manager"),
		chromedp.Click(chromedp.CSS(`form.answers button[type=submit]`)),
		chromedp.WaitVisible(chromedp.Search(`//pre[contains(., "needs a manager")]`)))
	if refunds() != 0 {
		t.Fatal("a rejected refund ran")
	}

	suspend()
	sent := b.answers.Load()
	step("an edit the schema refuses",
		chromedp.Click(chromedp.CSS(`input[type=radio][value=edit]`)),
		chromedp.SetValue(chromedp.CSS(`textarea[id^="arguments-"]`), `{"order_id": 0}`),
		chromedp.Click(chromedp.CSS(`form.answers button[type=submit]`)),
		chromedp.WaitVisible(chromedp.Search(`//p[@role="alert" and contains(., "Not sent") and contains(., ".arguments.order_id: must be at least 1")]`)))
	invalid, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.activeElement.matches('textarea[aria-invalid="true"]')`))
	if err != nil || !invalid {
		t.Fatalf("the refused edit's field is not marked and focused: %v", err)
	}
	if n := b.answers.Load() - sent; n != 0 || refunds() != 0 {
		t.Fatalf("a refused edit was sent (%d answer posts) or ran the tool (%d)", n, refunds())
	}
	step("a valid edit",
		chromedp.Click(chromedp.CSS(`input[type=radio][value=edit]`)),
		chromedp.SetValue(chromedp.CSS(`textarea[id^="arguments-"]`), `{"order_id": 7}`),
		chromedp.Click(chromedp.CSS(`form.answers button[type=submit]`)),
		chromedp.WaitVisible(chromedp.Search(`//div[contains(., "Refunded 12.00 EUR for order 7.")]`)))
	if n := refunds(); n != 1 {
		t.Fatalf("the edited refund ran %d times", n)
	}

	// Branch at turn 1: the new session holds its prefix only.
	turns, _ := b.tl.Store.Turns(bg, s.ID)
	step("branch at turn 1",
		chromedp.Click(chromedp.CSS(`button[aria-label="Branch here, after turn `+turns[0].ID+`"]`)),
		chromedp.WaitVisible(chromedp.Search(`//li[contains(., "branched from")]`)))
	page, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".transcript")))
	if err != nil || !strings.Contains(page, "Order 42 is shipped") || strings.Contains(page, "refund order 42") {
		t.Fatalf("the branch's transcript: %s %v", page, err)
	}
}

const reviewConfig = `
apps:
  demo:
    start_agent: support
    llms:
      m:
        provider: scripted
        rules:
          - reply: "the refund code is R-77"
    agents:
      support: {llm: m, instructions: x}
guardrail_policy:
  - {name: refund-codes, action: review, pattern: 'R-[0-9]+', applies_to: [model_output]}
`

// TestKeyboardNarrowAndReview: the inspector works from the keyboard alone (sign in,
// open a session, run a turn, answer, branch, replay), reads on a narrow screen without sideways
// scrolling, and answers a guardrail review: the held answer is released with notes.
func TestKeyboardNarrowAndReview(t *testing.T) {
	t.Parallel()
	b := setupConfig(t, []byte(reviewConfig), "", false)
	ctx := chromium(t)
	s, _ := b.tl.Engine.CreateSession(context.Background(), "demo", "alice", nil)
	base := b.srv.URL
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	focused := func() string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
			const e = document.activeElement;
			if (!e || e === document.body) return "";
			if (e.type === "radio") return "radio " + e.value + ": " + (e.labels && e.labels[0] ? e.labels[0].textContent : "");
			return e.id || e.getAttribute("href") || e.textContent || "";
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tabTo := func(want string) {
		t.Helper()
		for i := 0; i < 40; i++ {
			if strings.Contains(focused(), want) {
				return
			}
			step("tab", chromedp.KeyEvent("\t"))
		}
		t.Fatalf("Tab never reached %q (at %q)", want, focused())
	}
	step("sign in by keyboard", chromedp.Navigate(base+"/ui/signin"), chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.KeyEvent("k-alice"), chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`)))
	tabTo("/ui/sessions/" + s.ID)
	step("open it by keyboard", chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("transcript-h")))
	tabTo("input")
	step("run a turn by keyboard", chromedp.KeyEvent("show the code"), chromedp.Submit(chromedp.ID("input")), chromedp.WaitVisible(chromedp.ID("pending-h")))
	tabTo("Release it")
	step("answer by keyboard", chromedp.KeyEvent(" "))
	tabTo("notes-")
	step("notes, then send", chromedp.KeyEvent("fine, it is ours"))
	tabTo("Send the answers")
	step("send by keyboard", chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.Search(`//div[contains(., "the refund code is R-77")]`)))
	tabTo("Branch here")
	step("branch by keyboard", chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.Search(`//li[contains(., "branched from")]`)))
	step("the replay page", chromedp.Navigate(base+"/ui/replay"), chromedp.WaitVisible(chromedp.ID("session")))
	tabTo("session")
	step("pick a session by keyboard", chromedp.KeyEvent(kb.ArrowDown))
	// The newest session is the branch: its replay replays its source first.
	branches, _ := b.tl.Store.Branches(context.Background(), s.ID)
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("session").value`)); err != nil || len(branches) != 1 || v != branches[0].ID {
		t.Fatalf("the arrow key picked %q (%v), not the branch %+v", v, err, branches)
	}
	tabTo("Replay")
	step("replay by keyboard", chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("result-h")))
	if r, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".result"))); err != nil || !strings.Contains(r, "events match") {
		t.Fatalf("the replay chosen by keyboard: %q %v", r, err)
	}
	audit := b.browser()
	audit.signIn("k-alice")
	if a := audit.do("GET", "/ui/sessions/"+s.ID+"/audit", nil); !strings.Contains(a.body, "fine, it is ours") || !strings.Contains(a.body, "<td>review</td>") {
		t.Fatalf("the review in the audit: %s", a.body)
	}
	// A narrow screen: nothing scrolls sideways.
	for _, path := range []string{"/ui/", "/ui/sessions/" + s.ID, "/ui/replay"} {
		step("narrow "+path, chromedp.EmulateViewport(375, 800), chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS("main")))
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
		if err != nil || wide {
			t.Errorf("%s scrolls sideways at 375 px (%v)", path, err)
		}
	}
}

// gatedModel holds a model's streamed answer at two points: before its first piece
// (until the page listens) and after it (while the test looks at the page).
type gatedModel struct {
	fsm.Model
	listening, looked <-chan struct{}
}

func (g gatedModel) Call(ctx context.Context, req fsm.ModelRequest) (fsm.ModelResponse, error) {
	if on := req.OnText; on != nil {
		n := 0
		req.OnText = func(piece string) {
			if n == 0 {
				<-g.listening
			}
			on(piece)
			if n == 0 {
				<-g.looked
			}
			n++
		}
	}
	return g.Model.Call(ctx, req)
}

// TestAnswerStreamsInABrowser: a turn run from the page shows its steps and its
// answer's text as they arrive, before the turn ends; then the page shows it whole.
func TestAnswerStreamsInABrowser(t *testing.T) {
	t.Parallel()
	listening, looked := make(chan struct{}), make(chan struct{})
	b := setupOptions(t, turnlog.Options{ConfigData: demo.Config, WrapModel: func(_ string, m fsm.Model) fsm.Model {
		return gatedModel{Model: m, listening: listening, looked: looked}
	}}, "", false)
	ctx := chromium(t)
	s, _ := b.tl.Engine.CreateSession(context.Background(), "demo", "alice", nil)
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("sign in and run a turn",
		chromedp.Navigate(b.srv.URL+"/ui/signin"),
		chromedp.SendKeys(chromedp.ID("key"), "k-alice"),
		chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`)),
		chromedp.Navigate(b.srv.URL+"/ui/sessions/"+s.ID),
		chromedp.SendKeys(chromedp.ID("input"), "where is order 42?"),
		chromedp.Submit(chromedp.ID("input")),
		// The page the post led to (the one before it was connected too): its turn runs.
		chromedp.WaitReady(chromedp.CSS(`tr.turn-running`)),
		chromedp.WaitReady(chromedp.CSS(`#live[data-connected="true"]`)))
	close(listening)
	step("the first piece of the answer", chromedp.WaitVisible(chromedp.Search(`//li[contains(@class, "arriving") and contains(., "Order")]`)))
	live, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("live")))
	if err != nil || !strings.Contains(live, "result of lookup_order") || strings.Contains(live, "shipped") {
		t.Fatalf("the live section while the answer arrives: %q %v", live, err)
	}
	if turn, _ := b.tl.Store.LastTurn(context.Background(), s.ID); turn.Status != projection.TurnRunning {
		t.Fatalf("the turn is %s while its answer arrives", turn.Status)
	}
	close(looked)
	step("the whole answer, recorded", chromedp.WaitVisible(chromedp.Search(`//ol[contains(@class, "transcript")]//div[contains(., "Order 42 is shipped")]`)))
}

// TestHostileOutputAndFormsInABrowser: a tool's output holding script and HTML shows
// as text on the session page and the turn's timeline (no script runs, no element is
// made); a form whose CSRF token is taken out is refused in the browser, and nothing
// runs.
func TestHostileOutputAndFormsInABrowser(t *testing.T) {
	t.Parallel()
	const hostile = `<script>window.owned = 1</script><img src=x onerror="window.owned = 2"><b id="made">bold</b>`
	fns := demo.Functions()
	fns["lookup_order"] = functool.MustNew("lookup_order", "looks an order up", func(context.Context, struct {
		OrderID int `json:"order_id"`
	}) (any, error) {
		return map[string]any{"order_id": 42, "status": hostile, "carrier": "DHL", "eta": "soon"}, nil
	})
	b := setupOptions(t, turnlog.Options{ConfigData: demo.Config, Functions: fns}, "", false)
	ctx := chromium(t)
	s, res := b.session("alice", "where is order 42?")
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("sign in", chromedp.Navigate(b.srv.URL+"/ui/signin"), chromedp.SendKeys(chromedp.ID("key"), "k-alice"),
		chromedp.Submit(chromedp.ID("key")), chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`)))
	for _, page := range []string{"/ui/sessions/" + s.ID, "/ui/sessions/" + s.ID + "/turns/" + res.TurnID} {
		step("open "+page, chromedp.Navigate(b.srv.URL+page), chromedp.WaitVisible(chromedp.CSS("main h1")))
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err != nil {
			t.Fatal(err)
		}
		owned, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.owned !== undefined || document.getElementById("made") !== null || document.querySelector("main img") !== null`))
		if owned || !strings.Contains(text, `<script>window.owned = 1</script>`) || !strings.Contains(text, `onerror=`) {
			t.Fatalf("%s: the output ran or made elements (%v), or is not shown as text: %s", page, owned, text)
		}
	}
	turns := func() int {
		ts, _ := b.tl.Store.Turns(context.Background(), s.ID)
		return len(ts)
	}
	before := turns()
	step("a form without its CSRF token",
		chromedp.Navigate(b.srv.URL+"/ui/sessions/"+s.ID),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('form.input input[name="csrf"]').forEach(e => e.remove())`),
		chromedp.SendKeys(chromedp.ID("input"), "where is order 7?"),
		chromedp.Submit(chromedp.ID("input")),
		chromedp.WaitVisible(chromedp.CSS(".error")))
	page, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if !strings.Contains(page, "403") || !strings.Contains(page, "CSRF") || turns() != before {
		t.Fatalf("a post without CSRF: %d turns (was %d), page %s", turns(), before, page)
	}
}
