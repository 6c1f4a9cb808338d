package sqlite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/sqlite"
	"github.com/turnlog/turnlog/events"
)

// TestAppendsAfterCloseFail: an append that comes after Close (a turn still running
// when the server stops) fails with "store is closed" instead of waiting forever for
// a writer that has stopped, however its send races the close.
func TestAppendsAfterCloseFail(t *testing.T) {
	t.Parallel()
	for i := 0; i < 200; i++ {
		s, _ := sqlite.MustOpen(t, sqlite.Options{Synchronous: "OFF"})
		s.Close()
		_, err := s.Append(context.Background(), "s1", 0, []events.Event{events.MustNew("", "", &events.SessionCreated{App: "a", Owner: "o", Agent: "x"})})
		if err == nil || !strings.Contains(err.Error(), "store is closed") {
			t.Fatalf("append %d after close: %v", i, err)
		}
	}
}
