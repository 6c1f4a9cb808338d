// Package postgres is turnlog's store on PostgreSQL, for several turnlog nodes on
// one database: the same append-only log (enforced by triggers), blobs, read models,
// memories (searched with PostgreSQL's full-text search), idempotency keys, sign-ins
// and erasure as the SQLite store, behind the same ports, and the same views for
// people who read a session with psql. Each append is one transaction sent as one
// pipeline (append_batch.go): one round trip, its checks raised by the database
// (turnlog_append_check); a seq taken twice is refused by the (session, seq) key as a
// conflict.
//
// It must never hold turn logic, and never read or write SQLite.
package postgres
