// Package sqlrows is what turnlog's SQL stores share of reading and writing rows:
// scanning events (verifying blobs), sessions, turns, keys, hits and deliveries,
// decoding history items, and the text forms of times, vectors and null values the
// stores keep, and the watchers that wake live readers after a commit. It knows no
// SQL dialect and opens no database.
package sqlrows
