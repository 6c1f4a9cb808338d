// Package tracing turns the engine's spans (fsm.Tracer) into OpenTelemetry spans
// that follow the GenAI semantic conventions — invoke_agent for a turn's run and for
// a nested agent, chat for a model call, execute_tool for a tool call — and exports
// them over OTLP/HTTP when an endpoint is configured.
//
// Spans carry names, ids, paths, seqs, token counts and error codes: never an input,
// an output or an argument, since a trace cannot be erased with a session. It must
// never hold turn logic or block a turn: export is batched in the background.
package tracing
