package systemtest

import (
	"context"
	"github.com/turnlog/turnlog/cli"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnFilesStayOutOfSandboxes: in the default layout — serve in a project folder
// whose database, config and keys sit in the workspace — start refuses, naming the
// app, the directory and the file, so no agent can read another user's sessions or
// rewrite their owner. `run --workspace .` keeps its database in the state directory.
func TestOwnFilesStayOutOfSandboxes(t *testing.T) {
	proj := t.TempDir()
	outside := t.TempDir()
	cfg := filepath.Join(proj, "agent.yaml")
	os.WriteFile(cfg, []byte(strings.Replace(coderConfig, "WORKSPACE", proj, 1)), 0o644)
	outsideCfg := filepath.Join(outside, "agent.yaml")
	os.WriteFile(outsideCfg, []byte(strings.Replace(coderConfig, "WORKSPACE", proj, 1)), 0o644)
	keys := filepath.Join(proj, "keys.txt")
	os.WriteFile(keys, []byte("# the keys\nk1=alice\nk2=bob\n"), 0o600)
	for name, c := range map[string]struct {
		args []string
		file string
	}{
		"database":      {[]string{"serve", "--config", outsideCfg, "--db", filepath.Join(proj, "turnlog.db"), "--api-keys", "k=alice"}, filepath.Join(proj, "turnlog.db")},
		"database wal":  {[]string{"serve", "--config", outsideCfg, "--db", filepath.Join(proj, "sub", "..", "x.db"), "--api-keys", "k=alice"}, filepath.Join(proj, "x.db")},
		"config":        {[]string{"serve", "--config", cfg, "--db", filepath.Join(outside, "t.db"), "--api-keys", "k=alice"}, cfg},
		"api keys file": {[]string{"serve", "--config", outsideCfg, "--db", filepath.Join(outside, "t.db"), "--api-keys-file", keys}, keys},
		"run":           {[]string{"run", "--config", outsideCfg, "--db", filepath.Join(proj, "run.db"), "--app", "coder", "run ls"}, filepath.Join(proj, "run.db")},
	} {
		// A canceled context: a serve that does not refuse returns at once instead of
		// serving.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		args := c.args
		if args[0] == "serve" {
			args = append(args, "--addr", "127.0.0.1:0")
		}
		err := cli.Run(ctx, args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "apps.coder.policy.workspace") || !strings.Contains(err.Error(), proj) ||
			!strings.Contains(err.Error(), c.file) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, f := range []string{"turnlog.db", "x.db", "run.db"} {
		if _, err := os.Stat(filepath.Join(proj, f)); err == nil {
			t.Errorf("a refused start left %s in the workspace", f)
		}
	}
	// The common case keeps working: the database moves to the state directory.
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("TURNLOG_DB", "")
	_, stderr, err := runCLI(t, "run", "--config", outsideCfg, "--workspace", proj, "--app", "coder", "run ls")
	if err != nil || !strings.Contains(stderr, filepath.Join(state, "turnlog", "turnlog.db")) {
		t.Fatalf("run --workspace: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "turnlog", "turnlog.db")); err != nil {
		t.Fatal(err)
	}
}
