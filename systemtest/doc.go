// Package systemtest holds turnlog's process-level tests: kill -9 and restarts,
// several nodes on one database, a full disk, Litestream, campaigns, the README's
// commands run as written, and the binary's commands end to end. They run real
// processes — this package's test binary started as turnlog (the child modes of
// harness_test.go, the one harness), or turnlog built from the repository's root —
// and run from that root, where the README, the examples and the fixtures are.
//
// It holds no code but its tests, and none of turnlog imports it.
package systemtest
