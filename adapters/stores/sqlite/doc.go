// Package sqlite is turnlog's embedded event store on modernc.org/sqlite: the
// append-only events table, content-addressed blobs, projection tables maintained in
// the append transaction, migrations, and rebuild.
//
// It holds the SQLite dialect of turnlog's SQL (adapters/stores/postgres holds PostgreSQL's,
// adapters/stores/sqlrows what both share of rows, migrations/ the schema). Writes go through
// its one write connection: the caller that finds no commit under way leads, batching
// the appends of many sessions into one transaction (group commit), then hands the
// lead on; reads go through a separate read-only pool. It must never hold turn logic.
package sqlite
