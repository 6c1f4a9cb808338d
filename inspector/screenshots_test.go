package inspector_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// bulkSession appends a session of owner's with turns × 100 items.
func bulkSession(t testing.TB, tl *turnlog.Turnlog, owner string, turns int) string {
	t.Helper()
	ctx := context.Background()
	s, _ := tl.Engine.CreateSession(ctx, "demo", owner, nil)
	seq := int64(1)
	for turn := 0; turn < turns; turn++ {
		id := fmt.Sprintf("t%03d", turn)
		items := make([]events.Item, 0, 100)
		for i := 0; i < 50; i++ {
			items = append(items, events.UserMessage(fmt.Sprintf("question %d of turn %d: where is order %d?", i, turn, i)),
				events.AssistantMessage("support", strings.Repeat("An answer of some length. ", 8)))
		}
		evs := []events.Event{events.MustNew(id, "", &events.TurnStarted{Input: "bulk", Agent: "support"}),
			events.MustNew(id, "", &events.TurnCommitted{Items: items, Agent: "support", Output: "ok"})}
		if _, err := tl.Store.Append(ctx, s.ID, seq, evs); err != nil {
			t.Fatal(err)
		}
		seq += 2
	}
	return s.ID
}

// TestLongSessionInABrowser opens a session of 4,400 items in Chromium and reports
// how long the page took to show (not asserted: the machines are noisy).
func TestLongSessionInABrowser(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	ctx := chromium(t)
	id := bulkSession(t, b.tl, "alice", 44)
	if err := chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/ui/signin"), chromedp.SendKeys(chromedp.ID("key"), "k-alice"),
		chromedp.Submit(chromedp.ID("key")), chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/ui/sessions/"+id), chromedp.WaitVisible(chromedp.Search(`//p[contains(., "Items 4200–4400 of 4400")]`))); err != nil {
		t.Fatal(err)
	}
	t.Logf("Chromium showed the page of a 4,400-item session in %s", time.Since(start).Round(time.Millisecond))
}

// TestScreenshots writes the PNGs docs/inspector.md shows, one per page, into the
// folder TURNLOG_SCREENSHOTS names (make screenshots); without it, it does nothing,
// so make test leaves the clone clean.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("TURNLOG_SCREENSHOTS")
	if dir == "" {
		t.Skip("TURNLOG_SCREENSHOTS is not set (make screenshots sets it)")
	}
	b := setup(t, "", false)
	ctx := chromium(t)
	bg := context.Background()
	s, _ := b.session("alice", "where is order 42?", "can I get a refund for order 1001?", "refund order 42")
	turns, _ := b.tl.Store.Turns(bg, s.ID)
	shot := func(name, path, visible string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+path), chromedp.WaitVisible(chromedp.CSS(visible))); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "inspector-"+name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shot("signin", "/ui/signin", "#key")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("key"), "k-alice"), chromedp.Submit(chromedp.ID("key")),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Sessions"]`))); err != nil {
		t.Fatal(err)
	}
	shot("sessions", "/ui/", "table.sessions")
	shot("session", "/ui/sessions/"+s.ID, "#pending-h")
	shot("timeline", "/ui/sessions/"+s.ID+"/turns/"+turns[1].ID, "ol.timeline")
	shot("audit", "/ui/sessions/"+s.ID+"/audit", "table.audit")
	shot("replay", "/ui/replay", "form.replay")
}
