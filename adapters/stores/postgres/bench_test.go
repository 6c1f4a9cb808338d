package postgres_test

import (
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
	"github.com/turnlog/turnlog/fsm"
)

// BenchmarkAppendConcurrent is the SQLite store's benchmark of the same name on
// PostgreSQL: single small events from 1 and 50 sessions, each append one durable
// transaction.
func BenchmarkAppendConcurrent(b *testing.B) {
	storetest.BenchAppends(b, storetest.Harness{Open: func(t testing.TB) storetest.Store {
		return postgres.MustOpen(t, postgres.Options{MaxConns: 60})
	}})
}

// BenchmarkStoreEngineSteps is the engine's step, 200 turns of 10, on PostgreSQL:
// the same code the SQLite store runs (storetest.BenchEngineSteps).
func BenchmarkStoreEngineSteps(b *testing.B) {
	storetest.BenchEngineSteps(b, storetest.Harness{Open: func(t testing.TB) storetest.Store {
		return postgres.MustOpen(t, postgres.Options{})
	}, Cluster: func(s storetest.Store) fsm.Cluster { return s.(*postgres.Store) }})
}
