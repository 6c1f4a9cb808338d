package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/events"
)

func isCode(err error, code events.Code) bool {
	var te *events.Error
	return errors.As(err, &te) && te.Code == code
}

func newSession(t *testing.T, s Store, id, owner string) {
	t.Helper()
	ev := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: owner, Agent: "main"})
	if _, err := s.Append(context.Background(), id, 0, []events.Event{ev}); err != nil {
		t.Fatalf("create session %s: %v", id, err)
	}
}

func started(turn, input string) events.Event {
	return events.MustNew(turn, "", &events.TurnStarted{Input: input, Agent: "main"})
}

func appendAndRead(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	newSession(t, s, "s1", "alice")
	out, err := s.Append(ctx, "s1", 1, []events.Event{started("t1", "hi"), events.MustNew("t1", "", &events.LoopDetected{Tool: "x", Repeats: 3, Action: "hint"})})
	if err != nil || len(out) != 2 || out[0].Seq != 2 || out[1].Seq != 3 || out[0].Session != "s1" || out[0].At.IsZero() {
		t.Fatalf("append: %+v %v", out, err)
	}
	all, err := s.Events(ctx, "s1", 0)
	if err != nil || len(all) != 3 || all[0].Type != events.TypeSessionCreated || all[2].Type != events.TypeLoopDetected {
		t.Fatalf("events: %+v %v", all, err)
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
	}
	if after, err := s.Events(ctx, "s1", 2); err != nil || len(after) != 1 || after[0].Seq != 3 {
		t.Fatalf("events after 2: %+v %v", after, err)
	}
	if last, err := s.LastSeq(ctx, "s1"); err != nil || last != 3 {
		t.Fatalf("last seq: %d %v", last, err)
	}
	if last, err := s.LastSeq(ctx, "nobody"); err != nil || last != 0 {
		t.Fatalf("last seq of no session: %d %v", last, err)
	}
	if _, err := s.Session(ctx, "nobody"); !isCode(err, events.CodeNotFound) {
		t.Fatalf("a session that is not: %v", err)
	}
	for name, evs := range map[string][]events.Event{
		"no type":    {{Turn: "t1", V: 1, Data: []byte(`{}`)}},
		"no version": {{Type: "LoopDetected", Data: []byte(`{}`)}},
		"no data":    {{Type: "LoopDetected", V: 1}},
	} {
		if _, err := s.Append(ctx, "s1", 3, evs); !isCode(err, events.CodeInvalid) || !strings.Contains(err.Error(), "events[0]") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.Append(ctx, "", 0, []events.Event{started("t9", "x")}); !isCode(err, events.CodeInvalid) {
		t.Errorf("no session: %v", err)
	}
	if _, err := s.Append(ctx, "never", 0, []events.Event{started("t9", "x")}); !isCode(err, events.CodeNotFound) {
		t.Errorf("a turn of a session that was never created: %v", err)
	}
	if last, _ := s.LastSeq(ctx, "never"); last != 0 {
		t.Errorf("a refused first event was written: last seq %d", last)
	}
	if last, _ := s.LastSeq(ctx, "s1"); last != 3 {
		t.Fatalf("refused appends moved the session to %d", last)
	}
}

func staleAppendConflicts(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	newSession(t, s, "s1", "alice")
	if _, err := s.Append(ctx, "s1", 1, []events.Event{started("t1", "hi")}); err != nil {
		t.Fatal(err)
	}
	for _, after := range []int64{0, 1, 5} {
		if _, err := s.Append(ctx, "s1", after, []events.Event{started("t2", "again")}); !isCode(err, events.CodeConflict) {
			t.Errorf("append after %d when the session is at 2: %v", after, err)
		}
	}
	if evs, _ := s.Events(ctx, "s1", 0); len(evs) != 2 {
		t.Fatalf("conflicting appends wrote: %d events", len(evs))
	}
}

// refusedDataIsInvalidNotAConflict: data a store's own checks refuse (JSON nested
// past SQLite's depth, a NUL PostgreSQL's JSON functions cannot read) is either kept
// or refused as invalid naming the data — never a conflict, never with SQL shown —
// and the session can go on.
func refusedDataIsInvalidNotAConflict(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	deep := strings.Repeat("[", 1200) + strings.Repeat("]", 1200)
	for i, meta := range []string{`{"deep":` + deep + `}`, `{"nul":"a\u0000b"}`} {
		id := fmt.Sprintf("s%d", i)
		ev := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "alice", Agent: "main", Metadata: json.RawMessage(meta)})
		_, err := s.Append(ctx, id, 0, []events.Event{ev})
		t.Logf("%s…: %v", meta[:8], err)
		if err == nil {
			continue
		}
		var te *events.Error
		if !errors.As(err, &te) || te.Code != events.CodeInvalid || te.Field != "data" {
			t.Fatalf("%s: %v, want an invalid error about data", meta[:10], err)
		}
		for _, word := range []string{"constraint", "CHECK", "SQL", "json_valid", "sqlite", "pq:"} {
			if strings.Contains(te.Public(), word) {
				t.Fatalf("the public message %q names %q", te.Public(), word)
			}
		}
		newSession(t, s, id, "alice")
	}
}

func concurrentAppendsAtOneSeq(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	newSession(t, s, "s1", "alice")
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := events.MustNew("", "", &events.LoopDetected{Tool: fmt.Sprint(i), Repeats: 3, Action: "hint"})
			_, errs[i] = s.Append(ctx, "s1", 1, []events.Event{ev})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !isCode(err, events.CodeConflict):
			t.Errorf("a losing append: %v, want conflict", err)
		}
	}
	if evs, _ := s.Events(ctx, "s1", 0); won != 1 || len(evs) != 2 {
		t.Fatalf("%d appends at seq 2 won, the session holds %d events", won, len(evs))
	}
}

func groupCommitOfManySessions(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	const sessions, each = 30, 10
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("s%02d", i)
			ev := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "o", Agent: "main"})
			if _, err := s.Append(ctx, id, 0, []events.Event{ev}); err != nil {
				errs <- err
				return
			}
			for k := 1; k <= each; k++ {
				ev := events.MustNew("", "", &events.LoopDetected{Tool: fmt.Sprint(k), Repeats: 3, Action: "hint"})
				if _, err := s.Append(ctx, id, int64(k), []events.Event{ev}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := 0; i < sessions; i++ {
		evs, err := s.Events(ctx, fmt.Sprintf("s%02d", i), 0)
		if err != nil || len(evs) != each+1 {
			t.Fatalf("session %d: %d events, %v", i, len(evs), err)
		}
	}
}

// failingMemberOfAGroupCommit: a request whose second event breaks a read model (the
// turn it starts exists already) fails whole although its first event was fine; the
// requests committed beside it are not harmed, and the session goes on from where
// it was.
func failingMemberOfAGroupCommit(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	newSession(t, s, "s1", "alice")
	start := started("t1", "hi")
	if _, err := s.Append(ctx, "s1", 1, []events.Event{start}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 0 {
				hint := events.MustNew("t1", "", &events.LoopDetected{Tool: "x", Repeats: 3, Action: "hint"})
				_, errs[i] = s.Append(ctx, "s1", 2, []events.Event{hint, start})
				return
			}
			ev := events.MustNew("", "", &events.SessionCreated{App: "demo", Owner: "o", Agent: "main"})
			_, errs[i] = s.Append(ctx, fmt.Sprintf("other%d", i), 0, []events.Event{ev})
		}()
	}
	wg.Wait()
	if errs[0] == nil {
		t.Fatal("a request that starts an existing turn again was taken")
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Fatalf("request %d failed with the bad one: %v", i+1, err)
		}
	}
	if last, _ := s.LastSeq(ctx, "s1"); last != 2 {
		t.Fatalf("session s1 is at seq %d after the failed request, want 2", last)
	}
	hint := events.MustNew("t1", "", &events.LoopDetected{Tool: "x", Repeats: 3, Action: "hint"})
	if _, err := s.Append(ctx, "s1", 2, []events.Event{hint}); err != nil {
		t.Fatalf("append after the failed request: %v", err)
	}
}

func unsyncedAppendsAreVisible(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	newSession(t, s, "s1", "alice")
	out, err := s.AppendUnsynced(ctx, "s1", 1, []events.Event{started("t1", "hi")})
	if err != nil || len(out) != 1 || out[0].Seq != 2 {
		t.Fatalf("unsynced append: %+v %v", out, err)
	}
	if last, _ := s.LastSeq(ctx, "s1"); last != 2 {
		t.Fatalf("an unsynced append is not visible: last seq %d", last)
	}
	if turn, err := s.Turn(ctx, "s1", "t1"); err != nil || turn.Status != "running" {
		t.Fatalf("the unsynced turn: %+v %v", turn, err)
	}
	if _, err := s.AppendUnsynced(ctx, "s1", 1, []events.Event{started("t2", "x")}); !isCode(err, events.CodeConflict) {
		t.Fatalf("a stale unsynced append: %v", err)
	}
}

func blobsRoundTrip(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	big := strings.Repeat("blob payload ", 8<<10) // about 100 KiB
	for _, id := range []string{"s1", "s2"} {
		newSession(t, s, id, "alice")
		ev := events.MustNew("t1", "main/tool/c1", &events.ToolResulted{CallID: "c1", Tool: "dump", Output: big})
		for after := int64(1); after <= 2; after++ { // the same payload twice, and in two sessions
			if _, err := s.Append(ctx, id, after, []events.Event{ev}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range []string{"s1", "s2"} {
		evs, err := s.Events(ctx, id, 1)
		if err != nil || len(evs) != 2 {
			t.Fatalf("%s: %d events, %v", id, len(evs), err)
		}
		for _, ev := range evs {
			tr, err := events.DecodeAs[*events.ToolResulted](ev)
			if err != nil || tr.Output != big {
				t.Fatalf("%s seq %d: a big payload came back as %d bytes, %v", id, ev.Seq, len(tr.Output), err)
			}
		}
	}
}

func historyKeepsCanonicalBytes(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	newSession(t, s, "s1", "alice")
	items := []events.Item{
		events.UserMessage("hi"),
		{Type: events.ItemFunctionCall, CallID: "c1", Name: "t", Arguments: []byte(`{"n":1.5,"z":[1,2,{"a":null}]}`)},
		{Type: events.ItemFunctionCallOutput, CallID: "c1", Output: `{"b":"é\u2028","a":1}`},
	}
	commit := events.MustNew("t1", "", &events.TurnCommitted{Items: items})
	if _, err := s.Append(ctx, "s1", 1, []events.Event{started("t1", "hi"), commit}); err != nil {
		t.Fatal(err)
	}
	raw, err := s.HistoryRaw(ctx, "s1")
	if err != nil || len(raw) != len(items) {
		t.Fatalf("history: %d items, %v", len(raw), err)
	}
	for i, it := range items {
		want, err := events.Canonicalize(events.MustMarshal(it))
		if err != nil {
			t.Fatal(err)
		}
		if string(raw[i]) != string(want) {
			t.Errorf("item %d:\n got %s\nwant %s", i, raw[i], want)
		}
	}
}
