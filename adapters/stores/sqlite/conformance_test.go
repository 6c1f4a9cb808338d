package sqlite_test

import (
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/adapters/stores/storetest"
)

// TestConformance runs the suite every store runs.
func TestConformance(t *testing.T) {
	storetest.Exercise(t, storetest.Harness{Open: func(t testing.TB) storetest.Store {
		s, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
		return s
	}})
}
