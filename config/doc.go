// Package config reads agent.yaml strictly (unknown fields are errors with line and
// column) and assembles the apps it describes: agents, registered models (llms),
// tools and limits, wired to model providers and to the Go function tools the
// binary offers.
//
// It is a real concept of its own because both `serve` and `run`, `replay` and the
// tests build apps the same way. It must never run a turn or open a store.
package config
