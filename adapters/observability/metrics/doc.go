// Package metrics exposes turnlog's Prometheus metrics: turns by status, model and
// tool call latencies, events appended, SSE clients and HTTP requests, on a registry
// of its own (no global state), served at /metrics.
//
// It must never hold turn logic: it only counts what the engine, the store and the
// API report to it.
package metrics
