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
		"apps: {}\n": "agent.yaml:1: apps: at least one app is required",
		"apps:\n  a:\n    start_agent: x\n    colour: red\n":               "[4:5] unknown field \"colour\"",
		"apps:\n  a:\n    start_agent: x\n  a:\n    start_agent: y\n":      `mapping key "a" already defined`,
		"apps:\n  a:\n    tools:\n      t: {max_calls: many}\n":            "cannot unmarshal",
		"apps:\n  a:\n    agents:\n      m: {tools: [{agent: b, x: 1}]}\n": `unknown field "x"`,
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
	doc, err := config.Decode("agent.yaml", []byte("apps:\n  shop:\n    start_agent: clerk\n    tools:\n      refund:\n        url: http://127.0.0.1:1/\n"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"apps.shop.tools.refund.url":         "agent.yaml:6: apps.shop.tools.refund.url: x",
		"apps.shop.tools.refund.description": "agent.yaml:6: apps.shop.tools.refund.description: x",
		"apps.shop.agents":                   "agent.yaml:3: apps.shop.agents: x",
	} {
		if got := doc.ErrAt(path, "x").Error(); got != want {
			t.Errorf("ErrAt(%s) = %s, want %s", path, got, want)
		}
	}
}
