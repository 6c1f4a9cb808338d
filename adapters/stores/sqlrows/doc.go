// Package sqlrows is what turnlog's SQL stores share: the statements both dialects
// read alike (idempotency keys, memories, session pages, the erasure's steps, webhook
// deliveries — written once with SQLite's numbered parameters, Dollar giving them to
// PostgreSQL), scanning events (verifying blobs), sessions, turns, keys, hits and
// deliveries, a session's plan through its lineage, decoding history items, the text forms of times, vectors and null
// values the stores keep, and the watchers that wake live readers after a commit.
//
// It opens no database, and holds no statement only one dialect reads (FTS5 or
// tsvector, INDEXED BY, casts, row locks) and nothing of either store's append path.
package sqlrows
