package sqlite

import (
	"context"
	"path/filepath"
	"testing"
)

// MustOpen opens a Store on a fresh file under t.TempDir() and closes it with the test.
func MustOpen(t testing.TB, opts Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "turnlog.db")
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}
