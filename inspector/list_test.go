package inspector_test

import (
	"strings"
	"testing"
)

// TestTheListNamesEachSessionByItsFirstInput: the sessions list shows each session's
// first input as its title, its status with a marker when it waits, its agent and its
// last activity; the page of a waiting session counts the waiting turn and shows what
// it was asked.
func TestTheListNamesEachSessionByItsFirstInput(t *testing.T) {
	t.Parallel()
	b := setup(t, "", false)
	done, _ := b.session("alice", "where is order 42?", "and order 7?")
	waiting, res := b.session("alice", "refund order 42")
	if len(res.Interrupts) != 1 {
		t.Fatalf("suspend: %+v", res)
	}
	w := b.browser()
	w.signIn("k-alice")
	list := w.do("GET", "/ui/", nil)
	for _, want := range []string{">where is order 42?</a>", ">refund order 42</a>", "<strong class=\"waiting\">waiting for a person</strong>", "Last activity", done.ID, waiting.ID} {
		if !strings.Contains(list.body, want) {
			t.Errorf("the list lacks %q:\n%s", want, list.body)
		}
	}
	if strings.Contains(list.body, ">and order 7?</a>") {
		t.Error("a session is titled by a later input")
	}
	page := w.do("GET", "/ui/sessions/"+waiting.ID, nil)
	for _, want := range []string{"1 turn (0 committed)", "The turn that waits was asked: <q>refund order 42</q>"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the waiting session's page lacks %q:\n%s", want, page.body)
		}
	}
}
