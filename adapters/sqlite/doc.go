// Package sqlite is turnlog's embedded event store on modernc.org/sqlite: the
// append-only events table, content-addressed blobs, projection tables maintained in
// the append transaction, migrations, and rebuild.
//
// It is the only home of SQL besides migrations/. One goroutine owns every write and
// batches appends from many sessions into one transaction (group commit); reads go
// through a separate read-only pool. It must never hold turn logic.
package sqlite
