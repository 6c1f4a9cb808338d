package config_test

import (
	"strings"
	"testing"

	"github.com/turnlog/turnlog/config"
)

// TestDecodeIsStrict: shape errors are refused at decode, with the line.
func TestDecodeIsStrict(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"apps: {}\n": "agent.yaml:1: apps: needs at least 1 entry",
		"apps:\n  a:\n    start_agent: x\n    agents: {x: {llm: m}}\n    mcp: {servers: {s: {url: http://127.0.0.1:1/, timeout: 5s, timeout_seconds: 5}}}\n": "apps.a.mcp.servers.s: give one of these keys, not both",
		"apps:\n  a:\n    start_agent: x\n    colour: red\n":               "agent.yaml:4: apps.a.colour: is not a known key here",
		"apps:\n  a:\n    start_agent: x\n  a:\n    start_agent: y\n":      `mapping key "a" already defined`,
		"apps:\n  a:\n    tools:\n      t: {max_calls: many}\n":            "agent.yaml:4: apps.a.tools.t.max_calls: is a string, want an integer",
		"apps:\n  a:\n    agents:\n      m: {tools: [{agent: b, x: 1}]}\n": "agent.yaml:4: apps.a.agents.m.tools[0].x: is not a known key here",
	} {
		_, err := config.Decode("agent.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %s", src, err, want)
		}
	}
}

// TestErrAtFindsTheLine: an error names the field's line, or — for a field that is
// missing — the line where the enclosing mapping starts.
func TestErrAtFindsTheLine(t *testing.T) {
	t.Parallel()
	doc, err := config.Decode("agent.yaml", []byte("apps:\n  shop:\n    start_agent: clerk\n    tools:\n      refund:\n        url: http://127.0.0.1:1/\n    agents: {clerk: {llm: m}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"apps.shop.tools.refund.url":         "agent.yaml:6: apps.shop.tools.refund.url: x",
		"apps.shop.tools.refund.description": "agent.yaml:6: apps.shop.tools.refund.description: x",
		"apps.shop.retention":                "agent.yaml:3: apps.shop.retention: x",
	} {
		if got := doc.ErrAt(path, "x").Error(); got != want {
			t.Errorf("ErrAt(%s) = %s, want %s", path, got, want)
		}
	}
}
