package turnlog

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/turnlog/turnlog/config"
)

// StateDir is turnlog's own directory for what is not in the log:
// $XDG_STATE_HOME/turnlog, else ~/.local/state/turnlog (created, mode 0700).
func StateDir() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory (set XDG_STATE_HOME): %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	dir = filepath.Join(dir, "turnlog")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return dir, nil
}

// stateDir is the options' state directory, or the default one.
func (o Options) stateDir() (string, error) {
	if o.StateDir != "" {
		return o.StateDir, nil
	}
	return StateDir()
}

// hasStdioServers says whether any app of the config runs an MCP server of its own.
func hasStdioServers(doc *config.Doc) bool {
	for _, app := range doc.Apps {
		if app.MCP == nil {
			continue
		}
		for _, s := range app.MCP.Servers {
			if len(s.Command) > 0 {
				return true
			}
		}
	}
	return false
}
