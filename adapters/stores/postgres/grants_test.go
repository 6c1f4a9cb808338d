package postgres

import (
	"testing"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/storetest"
)

func TestTheGrantsAreReadAloneAndAudited(t *testing.T) {
	t.Parallel()
	storetest.CheckGrants(t, MustOpen(t, Options{MaxConns: 2}), "s1")
}

func TestTheRecoveriesAreAudited(t *testing.T) {
	t.Parallel()
	storetest.CheckRecoveriesAudit(t, MustOpen(t, Options{MaxConns: 2}), "s1")
}

func TestThePlanIsTheLatestUpdatePlan(t *testing.T) {
	t.Parallel()
	storetest.CheckPlan(t, MustOpen(t, Options{MaxConns: 2}))
}

func TestSpendIsCountedBySessionAndDay(t *testing.T) {
	t.Parallel()
	storetest.CheckSpend(t, MustOpen(t, Options{MaxConns: 2}), time.Now())
}
