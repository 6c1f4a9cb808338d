package cli

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
	if shown := shownDB("postgres://u@127.0.0.1/x?password=s3cret-pw&sslpassword=key-pw&sslmode=require"); strings.Contains(shown, "s3cret-pw") ||
		strings.Contains(shown, "key-pw") || !strings.Contains(shown, "sslmode=require") {
		t.Fatalf("shown with password parameters: %s", shown)
	}
	if got := databaseAddrs("postgres://u@/x?host=10.9.8.7&port=6432"); !slices.Equal(got, []string{"10.9.8.7:6432"}) {
		t.Fatalf("host and port parameters: %v", got)
	}
	if got := databaseAddrs("postgres://u@/x?host=/var/run/postgresql"); len(got) != 0 {
		t.Fatalf("a unix socket: %v", got)
	}
	if shownDB("turnlog.db") != "turnlog.db" || databaseAddrs("turnlog.db") != nil {
		t.Fatal("a SQLite file")
	}
}
