package sqlite

import (
	"context"
	"os"
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

// CopyAsACrashLeavesIt copies a live store's database and WAL files from one path to
// another while the store runs: what a process killed at that moment leaves on disk
// (committed transactions, nothing of its memory).
func CopyAsACrashLeavesIt(t testing.TB, from, to string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal"} {
		raw, err := os.ReadFile(from + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+suffix, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
