package main

import (
	"slices"
	"strings"
	"testing"
)

// TestDatabaseURLStaysPrivate: a PostgreSQL URL is shown without its password, and
// its addresses are ones no sandboxed command may reach.
func TestDatabaseURLStaysPrivate(t *testing.T) {
	t.Parallel()
	db := "postgres://turnlog:s3cret-pw@127.0.0.1:5433,db2:6000/turnlog?sslmode=disable"
	if shown := shownDB(db); strings.Contains(shown, "s3cret-pw") || !strings.Contains(shown, "127.0.0.1:5433") {
		t.Fatalf("shown: %s", shown)
	}
	if got := databaseAddrs(db); !slices.Equal(got, []string{"127.0.0.1:5433", "db2:6000"}) {
		t.Fatalf("addresses: %v", got)
	}
	if got := databaseAddrs("postgresql://u@[::1]/x"); !slices.Equal(got, []string{"[::1]:5432"}) {
		t.Fatalf("default port: %v", got)
	}
	if shownDB("turnlog.db") != "turnlog.db" || databaseAddrs("turnlog.db") != nil {
		t.Fatal("a SQLite file")
	}
}
