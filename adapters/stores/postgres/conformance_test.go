package postgres_test

import (
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/fsm"
)

// TestConformance runs the suite every store runs.
func TestConformance(t *testing.T) {
	storetest.Exercise(t, storetest.Harness{Open: func(t testing.TB) storetest.Store {
		return postgres.MustOpen(t, postgres.Options{MaxConns: 8})
	}, Cluster: func(s storetest.Store) fsm.Cluster { return s.(*postgres.Store) }})
}
