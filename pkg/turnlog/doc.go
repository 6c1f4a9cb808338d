// Package turnlog is turnlog assembled: the one package that builds apps from
// agent.yaml (models, Go function, HTTP, command and MCP tools, workspaces, memory on
// the open log), opens the log and the engine, and serves the REST API. The turnlog
// binary is built on it, and so is any Go program that embeds turnlog:
//
//	tl, err := turnlog.Open(ctx, turnlog.Options{Config: "agent.yaml", DB: "turnlog.db",
//		Functions: turnlog.Functions{"get_weather": functool.MustNew("get_weather", "...", getWeather)}})
//	...
//	res, err := tl.Engine.RunTurn(ctx, session, "what is the weather in Oslo?")
//	// or: tl.Serve(ctx, listener, turnlog.ServeOptions{Keys: keys})
//
// A program that imports it can run sandboxed commands: the sandbox starts the
// program's own binary again as its helper, which this package's init takes over
// before the program's main runs.
//
// It must never hold turn logic (fsm does) or decode agent.yaml itself (config does);
// it is the only package that imports httpapi.
package turnlog
