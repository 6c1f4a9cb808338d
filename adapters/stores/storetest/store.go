package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/projection"
)

// Store is every port a turnlog store offers, as the engine, the API, the inspector
// and the tools use them.
type Store interface {
	fsm.Store
	Turns(ctx context.Context, session string) ([]projection.Turn, error)
	PendingInterrupts(ctx context.Context, session string) ([]projection.Interrupt, error)
	SessionPage(ctx context.Context, owner, app string, afterCreated time.Time, afterID string, limit int) ([]projection.Session, error)
	SessionsWaiting(ctx context.Context, owner, app string) ([]projection.Session, error)
	HistoryRaw(ctx context.Context, session string) ([]json.RawMessage, error)
	Audit(ctx context.Context, session string) ([]projection.AuditEntry, error)
	SaveMemory(ctx context.Context, m projection.Memory) (int64, bool, error)
	SearchMemory(ctx context.Context, app, owner, text string, limit int) ([]projection.MemoryHit, error)
	SessionOwner(ctx context.Context, session string) (string, string, error)
	ClaimKey(ctx context.Context, r projection.IdempotencyRecord, now time.Time) (projection.IdempotencyRecord, bool, error)
	Key(ctx context.Context, owner, key string) (projection.IdempotencyRecord, error)
	SetKeyTarget(ctx context.Context, owner, key string, claimedAt time.Time, session, turn string, startSeq int64) error
	ReleaseKey(ctx context.Context, owner, key string, claimedAt time.Time) error
	CreateUISession(ctx context.Context, u projection.UISession) error
	UISession(ctx context.Context, idHash string, now time.Time) (projection.UISession, error)
	RevokeUISession(ctx context.Context, idHash string, now time.Time) error
	Erasures(ctx context.Context, after string, limit int) ([]projection.ErasureReceipt, error)
	Rebuild(ctx context.Context) (int64, error)
	DumpProjections(ctx context.Context) (string, error)
	RouteWebhooks(r projection.WebhookRouter)
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]projection.Delivery, error)
	RecordDelivery(ctx context.Context, id string, attempt int, o projection.DeliveryOutcome) error
	NextDelivery(ctx context.Context) (time.Time, bool, error)
	Deliveries(ctx context.Context, f projection.DeliveryFilter) ([]projection.Delivery, error)
	Delivery(ctx context.Context, id string) (projection.Delivery, error)
	Redeliver(ctx context.Context, id string, now time.Time) (projection.Delivery, error)
	DeliveryEvent(ctx context.Context, d projection.Delivery) (events.Event, error)
}

// Harness is how the suite gets stores to test.
type Harness struct {
	// Open returns a new, empty store that the test owns; it is closed by the test's
	// cleanup. Its clock is the wall clock; data over 64 KiB must go to its blobs.
	Open func(t testing.TB) Store
	// Cluster is what nodes share of a store Open returned, for a store several
	// nodes share (nil: one node): the suite's engines run with it as their
	// fsm.Options.Cluster, so their runs take leases and their appends are fenced,
	// as in production.
	Cluster func(Store) fsm.Cluster
}

// cluster is what h says nodes share of s (nil: one node).
func (h Harness) cluster(s Store) fsm.Cluster {
	if h.Cluster == nil {
		return nil
	}
	return h.Cluster(s)
}

// Exercise runs the whole suite on the stores h opens.
func Exercise(t *testing.T, h Harness) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Harness)
	}{
		{"AppendAndRead", appendAndRead},
		{"StaleAppendConflicts", staleAppendConflicts},
		{"RefusedDataIsInvalidNotAConflict", refusedDataIsInvalidNotAConflict},
		{"ConcurrentAppendsAtOneSeq", concurrentAppendsAtOneSeq},
		{"GroupCommitOfManySessions", groupCommitOfManySessions},
		{"FailingMemberOfAGroupCommit", failingMemberOfAGroupCommit},
		{"UnsyncedAppendsAreVisible", unsyncedAppendsAreVisible},
		{"BlobsRoundTrip", blobsRoundTrip},
		{"FileContents", fileContents},
		{"HistoryKeepsCanonicalBytes", historyKeepsCanonicalBytes},
		{"TurnsAndTheirReadModels", turnsAndTheirReadModels},
		{"SuspendedTurnsAndInterrupts", suspendedTurnsAndInterrupts},
		{"QueuedInputs", queuedInputs},
		{"BranchesAndTheirHistories", branchesAndTheirHistories},
		{"SessionPages", sessionPages},
		{"Memories", memories},
		{"IdempotencyKeys", idempotencyKeys},
		{"SignIns", signIns},
		{"Erasure", erasure},
		{"RebuildFoldsTheSame", rebuildFoldsTheSame},
		{"WatchHearsCommits", watchHearsCommits},
		{"WebhookOutbox", webhookOutbox},
		{"DeliveriesGoInOrderPerSession", deliveriesGoInOrderPerSession},
		{"EachDeliveryClaimedOnce", eachDeliveryClaimedOnce},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, h)
		})
	}
}
