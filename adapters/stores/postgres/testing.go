package postgres

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
)

// TestDSNEnv names the file that holds the DSN of a PostgreSQL the tests may use
// (.ci/start-postgres writes it); TestRequireEnv, when set, makes a test that needs
// it fail rather than skip without it.
const (
	TestDSNEnv     = "TURNLOG_TEST_POSTGRES"
	TestRequireEnv = "TURNLOG_REQUIRE_POSTGRES"
)

// TestDSN returns the DSN of the tests' PostgreSQL, or skips the test (fails it
// under TestRequireEnv) when there is none. The DSN is read from a file, so its
// password is never on a command line.
func TestDSN(t testing.TB) string {
	t.Helper()
	path := os.Getenv(TestDSNEnv)
	if path == "" {
		if os.Getenv(TestRequireEnv) != "" {
			t.Fatalf("%s is not set: .ci/start-postgres starts a PostgreSQL and prints the file to set it to", TestDSNEnv)
		}
		t.Skipf("no PostgreSQL: set %s to the file .ci/start-postgres prints", TestDSNEnv)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the PostgreSQL DSN: %v", err)
	}
	return strings.TrimSpace(string(raw))
}

// TestSchemaDSN makes a schema of the test's own on the tests' PostgreSQL, dropped
// when the test ends, and returns a DSN whose connections use it.
func TestSchemaDSN(t testing.TB) string {
	t.Helper()
	dsn := TestDSN(t)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", dsn); err == nil {
			db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
			db.Close()
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal("the PostgreSQL DSN is not a URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// MustOpenOn opens a store on dsn, closed when the test ends.
func MustOpenOn(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, Options{})
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// MustOpen opens a store in a schema of its own on the tests' PostgreSQL, dropped
// when the test ends.
func MustOpen(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), TestSchemaDSN(t), opts)
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
