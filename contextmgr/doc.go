// Package contextmgr builds what a model sees: it turns a session's conversation into
// the items of a model request that fits the agent's context window. It owns token
// counting (tiktoken's offline ranks, with scanners equal to its expressions), the layers and their budgets, tool output
// normalisation (head and tail, duplicates dropped, untrusted text marked as data),
// trimming by score, and what a compaction summary holds and how it is rendered.
//
// It is pure: no I/O, no clock, no model calls. The same conversation and config
// always give the same request, byte for byte, which is what lets a replay check a
// recorded request. It never changes the conversation itself — the log keeps
// everything — and it never drops the latest user message, the rules, the calls the
// model just made with their results, the most recent failed tool result, the current
// plan or a summary.
package contextmgr
