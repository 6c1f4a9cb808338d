// Package evals runs a suite of standard tasks against an app and says which pass:
// a suite (YAML) names an agent.yaml, an app and cases — the inputs of one or more
// turns, the approvals to give, and checks on what came of them (the answer, the
// tools called and their arguments, guardrails, tokens and cost). Each run of a case
// is a session of its own on the engine it is given, tagged with the eval run in its
// metadata, so the log keeps it like any other and it replays. Results are a table,
// JSON (which a later run compares with, as its baseline) and JUnit XML for CI
// systems.
//
// It owns the suite's format, the checks, running cases (several at once, each
// several times) and the reports. It never calls a model or a tool except through
// the engine's turns, and never writes outside the sessions it makes.
package evals
