// Package plan is turnlog's update_plan tool: an agent keeps its plan for the task —
// a goal line and items that are pending, in progress or done — by sending the whole
// plan each time it changes. The plan is the call's output, so the log holds every
// version and the latest is a read model (the plan view, GET /v1/sessions/{id}/plan).
//
// A plan is bounded (30 steps of 300 characters, a goal of 300: under 64 KiB as the
// event's data even in four-byte characters escaped twice) so that it is always held
// in its event's row, never in a blob, where the plan view and its index read it.
//
// It must never touch anything outside the log: no file, no network, no store.
package plan
