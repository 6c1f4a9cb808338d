package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/projection"
)

// TestIdempotencyKeysSurviveAReopen: a claimed key is there after the store is
// reopened, with what its request made (the rest of keys' rules: the conformance
// suite).
func TestIdempotencyKeysSurviveAReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, path := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := projection.IdempotencyRecord{Owner: "alice", Key: "k1", Route: "POST /v1/sessions", BodyHash: "h1", CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	if _, claimed, err := store.ClaimKey(ctx, rec, now); err != nil || !claimed {
		t.Fatalf("first claim: %v %v", claimed, err)
	}
	if err := store.SetKeyTarget(ctx, "alice", "k1", now, "s1", "t1", 5); err != nil {
		t.Fatal(err)
	}
	store.Close()
	reopened, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	got, claimed, err := reopened.ClaimKey(ctx, rec, now.Add(time.Hour))
	if err != nil || claimed || got.Session != "s1" || got.Turn != "t1" || got.BodyHash != "h1" {
		t.Fatalf("after a restart: %+v %v %v", got, claimed, err)
	}
}
