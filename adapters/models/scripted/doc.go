// Package scripted is turnlog's offline model provider: ordered rules from agent.yaml
// decide, deterministically, whether a model call answers with text or asks for tool
// calls, and fill templates from the input and from tool outputs.
//
// It must never read the clock, the network or random sources: the same request
// always gets the same response, which is what makes the demo and fixtures replayable.
package scripted
