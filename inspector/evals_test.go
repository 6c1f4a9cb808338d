package inspector_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/evals"
)

// TestTheEvalsPage: the page lists the signed-in user's eval runs — the suite's
// verdict and each case's passes — with each run of a case's session one click away;
// another user sees none of them.
func TestTheEvalsPage(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	suite, err := evals.ReadSuite(filepath.Join("..", "examples", "demo", "eval.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range suite.Cases {
		suite.Cases[i].Runs = 1
	}
	rep, err := (&evals.Runner{Engine: b.tl.Engine, Log: b.tl.Store, RunID: "run-ui", Owner: "alice"}).Run(context.Background(), suite)
	if err != nil || !rep.Passed {
		t.Fatalf("%+v %v", rep, err)
	}
	w := b.browser()
	w.signIn("k-alice")
	page := w.do("GET", "/ui/evals", nil)
	session := rep.Cases[0].Sessions[0]
	if page.status != http.StatusOK || !strings.Contains(page.body, "run <code>run-ui</code>: passed") ||
		!strings.Contains(page.body, "<td>order status</td><td>1/1</td>") || !strings.Contains(page.body, `href="/ui/sessions/`+session+`"`) {
		t.Fatalf("alice's evals page: %d\n%s", page.status, page.body)
	}
	if s := w.do("GET", "/ui/sessions/"+session, nil); s.status != http.StatusOK || !strings.Contains(s.body, "where is order 42?") {
		t.Fatalf("a case's session: %d", s.status)
	}
	// Metadata anyone may write names no one's run: bob's session claiming alice's
	// run is not her run's log.
	if _, err := b.tl.Engine.CreateSession(context.Background(), "demo", "bob", []byte(`{"eval_log":"true","eval_run":"run-ui"}`)); err != nil {
		t.Fatal(err)
	}
	bob := b.browser()
	bob.signIn("k-bob")
	if page := bob.do("GET", "/ui/evals", nil); page.status != http.StatusOK || strings.Contains(page.body, "run-ui") || !strings.Contains(page.body, "No eval run of yours yet") {
		t.Fatalf("bob's evals page: %d\n%s", page.status, page.body)
	}
}
