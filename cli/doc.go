// Package cli is the turnlog command: serve, run, replay, export, backup, erase,
// rebuild, migrate, migrate-store, doctor, policy and version, with their flags and
// exit statuses. main.go calls Main; tests call Run, or RunWith with their own
// Wiring (counted and gated tools and models).
//
// It assembles apps only through pkg/turnlog and opens only the stores itself (for
// the commands that read or change the log); it must never hold turn logic or
// decode agent.yaml itself.
package cli
