// Package turnlogtest builds apps from agent.yaml text in tests, closing what they
// hold open (MCP servers) when the test ends.
//
// It must never be imported outside tests.
package turnlogtest

import (
	"context"
	"testing"

	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// LoadApps builds the apps of agent.yaml data, shown in errors as name (relative
// paths in it start from name's folder).
func LoadApps(tb testing.TB, name string, data []byte, opts turnlog.Options) ([]*fsm.App, error) {
	tb.Helper()
	opts.Config, opts.ConfigData = name, data
	return load(tb, opts)
}

// LoadFile builds the apps of the agent.yaml at path.
func LoadFile(tb testing.TB, path string, opts turnlog.Options) ([]*fsm.App, error) {
	tb.Helper()
	opts.Config, opts.ConfigData = path, nil
	return load(tb, opts)
}

func load(tb testing.TB, opts turnlog.Options) ([]*fsm.App, error) {
	apps, err := turnlog.LoadApps(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	tb.Cleanup(func() { apps.Close() })
	return apps.List, nil
}
