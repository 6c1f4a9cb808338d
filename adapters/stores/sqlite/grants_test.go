package sqlite_test

import (
	"testing"

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
