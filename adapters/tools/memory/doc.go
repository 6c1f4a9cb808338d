// Package memory gives agents a long-term memory: the memory_save and memory_search
// tools over a Store (SQLite FTS5 with bm25 ranking, in adapters/stores/sqlite), scoped to
// the user and app of the calling session, with optional embeddings from an
// OpenAI-compatible /embeddings endpoint for hybrid ranking.
//
// A save is keyed by the activity that makes it (session, turn, path): a tool re-run
// after a crash, or a replayed turn, never writes a second row. It must never show one
// user's memories to another, and never decide policy (the engine does).
package memory
