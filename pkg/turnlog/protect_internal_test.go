package turnlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnFilesInSystemFolders: a database, config or keys file in a folder every
// sandboxed command reads is refused when others may read it, and accepted once they
// may not.
func TestOwnFilesInSystemFolders(t *testing.T) {
	t.Parallel()
	etc := t.TempDir() // stands for /etc
	keys := filepath.Join(etc, "turnlog", "keys")
	os.MkdirAll(filepath.Dir(keys), 0o755)
	os.WriteFile(keys, []byte("k=alice\n"), 0o644)
	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	os.WriteFile(cfg, nil, 0o644)
	if err := ownFilesUnreadable(cfg, []string{keys}, []string{etc}); err == nil || !strings.Contains(err.Error(), "chmod o-r") {
		t.Fatalf("a world-readable keys file in a system folder: %v", err)
	}
	os.Chmod(keys, 0o600)
	if err := ownFilesUnreadable(cfg, []string{keys}, []string{etc}); err != nil {
		t.Fatalf("a private keys file: %v", err)
	}
}
