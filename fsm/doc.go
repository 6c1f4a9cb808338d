// Package fsm owns the turn machine and its driver: the table of legal transitions
// (on looplab/fsm), the replay rule that looks up a recorded result by activity path
// before executing anything, tool durability, parallel tool calls, limits, and commit.
//
// It declares the ports it needs — Model, Tool, Store (everything a store must do,
// which each store asserts at compile time) and Cluster (what several nodes share,
// passed explicitly) — and never imports an adapter, an HTTP package or SQL: nothing
// here may assume SQLite.
package fsm
