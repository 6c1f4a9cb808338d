// Package mcpclient offers the tools of MCP servers (the official Go SDK) as turnlog
// tools named `<server>__<tool>`: it connects at start — a server command over stdio,
// run inside the sandbox, or a URL over streamable HTTP with an optional bearer token —
// discovers the tools, keeps the allowed ones, and calls them with a timeout.
//
// An MCP error result is a tool error the model sees; a result holding an integer
// beyond ±2^53 fails the call (it could not be recorded exactly). It never decides
// policy (the engine decides every call first) and never keeps a server the start
// could not reach.
package mcpclient
