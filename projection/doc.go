// Package projection turns events into read-model changes: the sessions, turns,
// history and branch-point models that the API and the SQL views show.
//
// Its folds are pure: they read no clock, make no IDs and do no I/O; time comes on
// the event. A store applies the changes in the append transaction, and rebuilding
// is applying them again from seq 0. It must never import a storage package.
package projection
