package systemtest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesADescriptorLimitTooSmall: serve checks at start that what its
// commands and their proxies may hold, with room for the store, fits its
// descriptor limit, and refuses to start, saying what to raise, when it does not.
func TestServeRefusesADescriptorLimitTooSmall(t *testing.T) {
	t.Parallel()
	bin := turnlogBinary(t)
	db := filepath.Join(t.TempDir(), "t.db")
	out, err := exec.Command("sh", "-c", `ulimit -n 1000 && exec "$@"`, "sh", bin, "serve", "--dev", "--addr", "127.0.0.1:0", "--db", db).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the descriptor limit is 1000") || !strings.Contains(string(out), "ulimit -n") {
		t.Fatalf("serve under a limit of 1000 descriptors: %v\n%s", err, out)
	}
}
