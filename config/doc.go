// Package config decodes agent.yaml strictly: first against its JSON Schema
// (agent.schema.json, embedded; every shape problem at once, each with its line), then
// into its types, and turns the parts
// that need nothing outside the file into checked values (the guardrail policy, an
// app's tool policy, an agent's context window), with errors naming the field and
// its line (Doc.ErrAt, which the assembly uses for everything it builds).
//
// It owns the schema and the reference docs/config.md shows, written from it.
//
// It must never import an adapter, build a model or a tool, connect to anything,
// run a turn or open a store: pkg/turnlog assembles apps from what it decodes.
package config
