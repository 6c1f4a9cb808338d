package sqlite_test

import (
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
)

func TestTheGrantsAreReadAloneAndAudited(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	storetest.CheckGrants(t, store, "s1")
}

func TestTheRecoveriesAreAudited(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	storetest.CheckRecoveriesAudit(t, store, "s1")
}

func TestThePlanIsTheLatestUpdatePlan(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	storetest.CheckPlan(t, store)
}

func TestSpendIsCountedBySessionAndDay(t *testing.T) {
	t.Parallel()
	store, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
	storetest.CheckSpend(t, store, time.Now())
}
