package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCommandsHaveNoCapabilities: turnlog running as root does not lend root's powers
// to a command: it cannot read another user's private file in the workspace (that
// takes CAP_DAC_OVERRIDE) nor give a file away (CAP_CHOWN).
func TestCommandsHaveNoCapabilities(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("capabilities are root's to lose; this process is not root")
	}
	s, _ := spec(t)
	private := filepath.Join(s.Workspace, "private.txt")
	os.WriteFile(private, []byte("another user's secret"), 0o600)
	if err := os.Chown(private, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(s.Workspace, "mine.txt")
	os.WriteFile(mine, []byte("x"), 0o644)
	res := run(t, s, "cat private.txt; chown 4242 mine.txt && echo CHOWNED; true")
	if strings.Contains(res.Stdout, "secret") || strings.Contains(res.Stdout, "CHOWNED") {
		t.Fatalf("the command used root's capabilities: %+v", res)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(mine, &st); err != nil || st.Uid != 0 {
		t.Fatalf("mine.txt now belongs to %d (%v)", st.Uid, err)
	}
}

// TestNoUserNamespaces: a command cannot make a user namespace (in which it would
// hold every capability again, over kernel code sandbox escapes have used).
func TestNoUserNamespaces(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	res := run(t, s, "unshare --user --map-root-user true && echo USERNS; unshare --user true && echo USERNS; true")
	if strings.Contains(res.Stdout, "USERNS") {
		t.Fatalf("the command made a user namespace: %+v", res)
	}
	// Threads still start (the C library falls back from clone3 to clone).
	if res := run(t, s, "python3 -c 'import threading; t = threading.Thread(target=print, args=(\"thread ok\",)); t.start(); t.join()' 2>&1 || echo no python"); !strings.Contains(res.Stdout, "thread ok") && !strings.Contains(res.Stdout, "no python") {
		t.Fatalf("threads: %+v", res)
	}
}
