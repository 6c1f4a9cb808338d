// Package migrations holds turnlog's numbered SQL schema migrations, embedded in the
// binary. Files are named NNNN_name.sql and applied in order, each once.
//
// A migration must never edit or drop event data: the events table is append-only,
// and only an erasure (one guarded path, see 0013) removes a session's events.
package migrations

import "embed"

// FS holds every migration file of the SQLite store.
//
//go:embed *.sql
var FS embed.FS

// Postgres holds the PostgreSQL store's own numbered migrations, under postgres/.
//
//go:embed postgres/*.sql
var Postgres embed.FS
