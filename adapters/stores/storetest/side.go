package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

func memories(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	save := func(app, owner, key, text string) (int64, bool) {
		t.Helper()
		id, created, err := s.SaveMemory(ctx, projection.Memory{App: app, Owner: owner, Key: key, Label: "note", Text: text, At: at})
		if err != nil {
			t.Fatal(err)
		}
		return id, created
	}
	tea, created := save("demo", "alice", "s1/t1/main/tool/c1", "alice drinks green tea every morning")
	if !created || tea == 0 {
		t.Fatalf("first save: %d %v", tea, created)
	}
	if again, created := save("demo", "alice", "s1/t1/main/tool/c1", "alice drinks green tea every morning"); created || again != tea {
		t.Fatalf("the same activity saved again: %d %v, want %d and not created", again, created, tea)
	}
	coffee, _ := save("demo", "alice", "s1/t2/main/tool/c1", "alice hates coffee")
	save("demo", "bob", "s2/t1/main/tool/c1", "bob drinks green tea too")
	save("other", "alice", "s3/t1/main/tool/c1", "green tea in another app")

	ids := func(text string) []int64 {
		t.Helper()
		hits, err := s.SearchMemory(ctx, "demo", "alice", text, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, h := range hits {
			if h.Text == "" {
				t.Fatalf("a hit without its text: %+v", h)
			}
			out = append(out, h.ID)
		}
		slices.Sort(out) // stores may rank differently: compare the sets
		return out
	}
	both := []int64{tea, coffee}
	slices.Sort(both)
	for text, want := range map[string][]int64{
		"green tea":            {tea},
		"coffee":               {coffee},
		"tea or coffee":        both,
		"nothing like it":      nil,
		`"; DROP TABLE x; --`:  nil,
		"TEA":                  {tea},
		"morning AND NOT tea)": {tea},
	} {
		if got := ids(text); !slices.Equal(got, want) {
			t.Errorf("search %q: %v, want %v", text, got, want)
		}
	}
	if hits, _ := s.SearchMemory(ctx, "demo", "alice", "tea coffee", 1); len(hits) != 1 {
		t.Errorf("a search limited to 1 found %d", len(hits))
	}
}

func idempotencyKeys(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := projection.IdempotencyRecord{Owner: "alice", Key: "k1", Route: "POST /v1/sessions", BodyHash: "h1", CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	if _, claimed, err := s.ClaimKey(ctx, rec, now); err != nil || !claimed {
		t.Fatalf("first claim: %v %v", claimed, err)
	}
	if err := s.SetKeyTarget(ctx, "alice", "k1", now.Add(time.Second), "s1", "t1", 5); !isCode(err, events.CodeConflict) {
		t.Fatalf("a target set for another claim of the key: %v", err)
	}
	if err := s.ReleaseKey(ctx, "alice", "k1", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetKeyTarget(ctx, "alice", "k1", now, "s1", "t1", 5); err != nil {
		t.Fatalf("the claim's own target: %v", err)
	}
	if err := s.SetKeyTarget(ctx, "alice", "k1", now, "s2", "t2", 6); !isCode(err, events.CodeConflict) {
		t.Fatalf("a second target: %v", err)
	}
	if err := s.ReleaseKey(ctx, "alice", "k1", now); err != nil {
		t.Fatal(err)
	}
	got, claimed, err := s.ClaimKey(ctx, rec, now.Add(time.Hour))
	if err != nil || claimed || got.Session != "s1" || got.Turn != "t1" || got.StartSeq != 5 || got.BodyHash != "h1" || got.Route != rec.Route {
		t.Fatalf("a claim of a key held: %+v %v %v", got, claimed, err)
	}
	if k, err := s.Key(ctx, "alice", "k1"); err != nil || k.Session != "s1" {
		t.Fatalf("key: %+v %v", k, err)
	}
	bob := rec
	bob.Owner = "bob"
	if _, claimed, _ := s.ClaimKey(ctx, bob, now.Add(time.Hour)); !claimed {
		t.Fatal("another user's key of the same name was taken")
	}
	if err := s.ReleaseKey(ctx, "bob", "k1", now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Key(ctx, "bob", "k1"); err != nil {
		t.Fatalf("a release for another claim of the key gave this one up: %v", err)
	}
	if _, claimed, _ := s.ClaimKey(ctx, rec, now.Add(25*time.Hour)); !claimed {
		t.Fatal("an expired key was not given up")
	}
	if k, err := s.Key(ctx, "alice", "k1"); err != nil || k.Session != "" || k.Turn != "" || k.StartSeq != 0 {
		t.Fatalf("an expired key claimed again keeps what its first claim made: %+v %v", k, err)
	}
	if err := s.ReleaseKey(ctx, "bob", "k1", now); err != nil {
		t.Fatal(err)
	}
	if _, claimed, _ := s.ClaimKey(ctx, bob, now.Add(time.Hour)); !claimed {
		t.Fatal("a released key was not given up")
	}
	// Claims of one key at once: one takes it, each other one is answered with the
	// record it took.
	carol := rec
	carol.Owner = "carol"
	var wg sync.WaitGroup
	var claims atomic.Int32
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, claimed, err := s.ClaimKey(ctx, carol, now)
			switch {
			case err != nil:
				errs <- err
			case claimed:
				claims.Add(1)
			case got.Owner != "carol" || got.BodyHash != "h1":
				errs <- fmt.Errorf("a claim that lost was answered with %+v", got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if claims.Load() != 1 {
		t.Fatalf("%d claims of one key at once took it", claims.Load())
	}
}

func signIns(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	u := projection.UISession{IDHash: "h1", KeyHash: "kh", User: "alice", Admin: true, CSRF: "c1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateUISession(ctx, u); err != nil {
		t.Fatal(err)
	}
	got, err := s.UISession(ctx, "h1", now.Add(time.Minute))
	if err != nil || got.User != "alice" || !got.Admin || got.CSRF != "c1" || got.KeyHash != "kh" || !got.ExpiresAt.Equal(u.ExpiresAt) {
		t.Fatalf("sign-in: %+v %v", got, err)
	}
	if _, err := s.UISession(ctx, "h1", now.Add(2*time.Hour)); !isCode(err, events.CodeNotFound) {
		t.Fatalf("an expired sign-in: %v", err)
	}
	if _, err := s.UISession(ctx, "nope", now); !isCode(err, events.CodeNotFound) {
		t.Fatalf("no sign-in: %v", err)
	}
	if err := s.RevokeUISession(ctx, "h1", now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UISession(ctx, "h1", now.Add(3*time.Minute)); !isCode(err, events.CodeNotFound) {
		t.Fatalf("a revoked sign-in: %v", err)
	}
}

func erasureRequest(id string, sessions ...string) projection.ErasureRequest {
	return projection.ErasureRequest{ID: id, Kind: projection.ErasureSession, Subject: sessions[0], By: "alice",
		At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Sessions: sessions}
}

func erasure(t *testing.T, h Harness) {
	s, ctx := h.Open(t), context.Background()
	big := strings.Repeat("y", 100<<10)
	for _, id := range []string{"s1", "s2"} {
		newSession(t, s, id, "alice")
		ev := events.MustNew("t1", "main/tool/c1", &events.ToolResulted{CallID: "c1", Tool: "dump", Output: big})
		if _, err := s.Append(ctx, id, 1, []events.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	newSession(t, s, "busy", "bob")
	if _, err := s.Append(ctx, "busy", 1, []events.Event{started("t1", "hi")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SaveMemory(ctx, projection.Memory{App: "demo", Owner: "alice", Key: "s1/t1/main/tool/c2", Text: "planted in s1", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if owned, err := s.OwnerSessions(ctx, "alice"); err != nil || !slices.Equal(owned, []string{"s1", "s2"}) {
		t.Fatalf("alice's sessions: %v %v", owned, err)
	}
	if idle, err := s.IdleSessions(ctx, "demo", time.Now().Add(time.Hour), "", 10); err != nil || !slices.Equal(idle, []string{"busy", "s1", "s2"}) {
		t.Fatalf("idle an hour from now: %v %v", idle, err)
	}
	if idle, err := s.IdleSessions(ctx, "demo", time.Now().Add(time.Hour), "busy", 1); err != nil || !slices.Equal(idle, []string{"s1"}) {
		t.Fatalf("idle after busy, one: %v %v", idle, err)
	}
	if idle, err := s.IdleSessions(ctx, "demo", time.Now().Add(-time.Hour), "", 10); err != nil || len(idle) != 0 {
		t.Fatalf("idle an hour ago: %v %v", idle, err)
	}

	if _, err := s.Erase(ctx, erasureRequest("e0", "s1", "busy")); !isCode(err, events.CodeConflict) || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("an erasure with a turn running: %v", err)
	}
	if evs, _ := s.Events(ctx, "s1", 0); len(evs) != 2 {
		t.Fatalf("a refused erasure removed events of s1: %d left", len(evs))
	}
	rec, err := s.Erase(ctx, erasureRequest("e1", "s1"))
	if err != nil || rec.Counts.Sessions != 1 || rec.Counts.Events != 2 || rec.Counts.Blobs != 0 || rec.Counts.Memories != 1 {
		t.Fatalf("erase s1: %+v %v", rec, err)
	}
	if _, err := s.Session(ctx, "s1"); !isCode(err, events.CodeNotFound) {
		t.Fatalf("the erased session: %v", err)
	}
	if evs, _ := s.Events(ctx, "s1", 0); len(evs) != 0 {
		t.Fatalf("the erased session still has %d events", len(evs))
	}
	if hits, _ := s.SearchMemory(ctx, "demo", "alice", "planted", 10); len(hits) != 0 {
		t.Fatalf("the erased session's memory is found: %+v", hits)
	}
	evs, err := s.Events(ctx, "s2", 1)
	if err != nil || len(evs) != 1 {
		t.Fatalf("s2 after s1's erasure: %d events, %v", len(evs), err)
	}
	if tr, err := events.DecodeAs[*events.ToolResulted](evs[0]); err != nil || tr.Output != big {
		t.Fatalf("s2's blob after s1's erasure: %v", err)
	}
	if _, err := s.Erase(ctx, erasureRequest("e2", "s1")); !isCode(err, events.CodeNotFound) {
		t.Fatalf("erase an erased session: %v", err)
	}
	if _, err := s.Erase(ctx, projection.ErasureRequest{Sessions: []string{"s2"}}); !isCode(err, events.CodeInvalid) {
		t.Fatalf("an erasure without id, kind and who: %v", err)
	}
	if _, err := s.Erase(ctx, erasureRequest("e3", "s2")); err != nil {
		t.Fatal(err)
	}
	receipts, err := s.Erasures(ctx, "", 10)
	if err != nil || len(receipts) != 2 || receipts[0].ID != "e1" || receipts[1].ID != "e3" || receipts[0].By != "alice" || !slices.Equal(receipts[0].Sessions, []string{"s1"}) {
		t.Fatalf("receipts: %+v %v", receipts, err)
	}
	if next, err := s.Erasures(ctx, "e1", 10); err != nil || len(next) != 1 || next[0].ID != "e3" {
		t.Fatalf("receipts after e1: %+v %v", next, err)
	}
	if _, err := s.Append(ctx, "s2", 0, []events.Event{started("t9", "late")}); !isCode(err, events.CodeNotFound) {
		t.Fatalf("a late event of an erased session: %v", err)
	}
	newSession(t, s, "parent", "dave")
	branched := events.MustNew("", "", &events.SessionBranched{App: "demo", Owner: "dave", Agent: "main", SourceSession: "parent", SourceSeq: 1})
	if _, err := s.Append(ctx, "child", 0, []events.Event{branched}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Erase(ctx, erasureRequest("e4", "parent")); !isCode(err, events.CodeConflict) || !strings.Contains(err.Error(), "child") {
		t.Fatalf("an erasure that would leave a branch without its source: %v", err)
	}
	if rec, err := s.Erase(ctx, projection.ErasureRequest{ID: "e5", Kind: projection.ErasureUser, Subject: "dave", By: "root", At: time.Now(), Owner: "dave"}); err != nil ||
		!slices.Equal(rec.Sessions, []string{"child", "parent"}) {
		t.Fatalf("a user's erasure takes every session of theirs, planned or not: %+v %v", rec, err)
	}
	newSession(t, s, "s1", "carol") // an erased id used again starts afresh
	if seq, err := s.LastSeq(ctx, "s1"); err != nil || seq != 1 {
		t.Fatalf("the new s1: last seq %d, %v", seq, err)
	}
}
