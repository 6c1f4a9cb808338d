package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

// These tests run real processes and fail only if an attack succeeds. They run with
// the mechanism TURNLOG_TEST_MECHANISM names (default landlock): `make test` runs them
// again with bubblewrap where bwrap is installed — and fails without it when
// TURNLOG_REQUIRE_BWRAP is set, as CI sets it.

const mechanismEnv = "TURNLOG_TEST_MECHANISM"

func spec(t *testing.T) (sandbox.Spec, string) {
	t.Helper()
	s := sandbox.Spec{Timeout: 20 * time.Second, Mechanism: os.Getenv(mechanismEnv)}
	if s.Mechanism == sandbox.MechanismBubblewrap {
		if _, err := exec.LookPath("bwrap"); err != nil {
			if os.Getenv("TURNLOG_REQUIRE_BWRAP") != "" {
				t.Fatalf("bubblewrap is required and bwrap is not installed: %v", err)
			}
			t.Skip("bwrap is not installed")
		}
	}
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside secret"), 0o644)
	s.Workspace = ws
	return s, outside
}

func run(t *testing.T, s sandbox.Spec, command string) *sandbox.Result {
	t.Helper()
	res, err := sandbox.Run(context.Background(), s, command)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return res
}

func TestCommandRunsInTheWorkspace(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	res := run(t, s, "echo hi > made.txt && cat made.txt && pwd && ls /usr/bin/env")
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "hi\n"+s.Workspace) {
		t.Fatalf("%+v", res)
	}
}

func TestCannotWriteOrReadOutside(t *testing.T) {
	t.Parallel()
	s, outside := spec(t)
	res := run(t, s, fmt.Sprintf("echo planted > %s/planted.txt; cat %s/secret.txt; echo x > /tmp/turnlog-escape-%d", outside, outside, os.Getpid()))
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
		t.Fatal("the command wrote outside the workspace")
	}
	if _, err := os.Stat(fmt.Sprintf("/tmp/turnlog-escape-%d", os.Getpid())); err == nil {
		os.Remove(fmt.Sprintf("/tmp/turnlog-escape-%d", os.Getpid()))
		t.Fatal("the command wrote to /tmp")
	}
	if strings.Contains(res.Stdout, "outside secret") {
		t.Fatal("the command read a file outside the workspace")
	}
	// Outside the workspace nothing of the host exists for the command (its own root);
	// what does (the system directories) Landlock and read-only mounts refuse.
	if !strings.Contains(res.Stderr, "No such file or directory") {
		t.Fatalf("no refusal reported: %+v", res)
	}
	res = run(t, s, "echo x > /usr/turnlog-escape; echo y > /etc/turnlog-escape; true")
	if _, err := os.Stat("/usr/turnlog-escape"); err == nil {
		os.Remove("/usr/turnlog-escape")
		t.Fatal("the command wrote to /usr")
	}
	if _, err := os.Stat("/etc/turnlog-escape"); err == nil {
		os.Remove("/etc/turnlog-escape")
		t.Fatal("the command wrote to /etc")
	}
	if !strings.Contains(res.Stderr, "Read-only file system") && !strings.Contains(res.Stderr, "Permission denied") {
		t.Fatalf("no refusal reported: %+v", res)
	}
}

// TestHostSocketsAreGone: a daemon's unix socket on the host (under /run, or in any
// directory outside the workspace) cannot be reached: the command's root does not
// hold it. (Landlock governs files, not connecting to a socket by its path.)
func TestHostSocketsAreGone(t *testing.T) {
	t.Parallel()
	s, outside := spec(t)
	paths := []string{filepath.Join(outside, "daemon.sock"), fmt.Sprintf("/run/turnlog-test-%d.sock", os.Getpid())}
	accepted := make(chan string, len(paths))
	for _, p := range paths {
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				accepted <- p
				c.Close()
			}
		}()
	}
	res := run(t, s, fmt.Sprintf("curl -s -m 3 --unix-socket %s http://x/ && echo CONNECTED; curl -s -m 3 --unix-socket %s http://x/ && echo CONNECTED; true", paths[0], paths[1]))
	noConnection(t, accepted, res)
}

// noConnection fails the test if a listener accepted the command or it said it
// connected.
func noConnection[T any](t *testing.T, accepted chan T, res *sandbox.Result) {
	t.Helper()
	select {
	case what := <-accepted:
		t.Fatalf("the sandboxed command reached a listener outside (%v): %+v", what, res)
	case <-time.After(200 * time.Millisecond):
	}
	if strings.Contains(res.Stdout, "CONNECTED") {
		t.Fatalf("connected: %+v", res)
	}
}

// TestPrivateTmp: a command has a /tmp of its own to write to, gone when it ends.
func TestPrivateTmp(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	name := fmt.Sprintf("/tmp/turnlog-private-%d", os.Getpid())
	res := run(t, s, fmt.Sprintf("echo scratch > %s && cat %s", name, name))
	if res.ExitCode != 0 || res.Stdout != "scratch\n" {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(name); err == nil {
		os.Remove(name)
		t.Fatal("the command's /tmp is the host's")
	}
}

func TestSymlinkOutIsClosed(t *testing.T) {
	t.Parallel()
	s, outside := spec(t)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(s.Workspace, "link"))
	os.Symlink(outside, filepath.Join(s.Workspace, "dir"))
	res := run(t, s, "cat link; echo planted > dir/planted.txt")
	if strings.Contains(res.Stdout, "outside secret") {
		t.Fatal("read through a symlink")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted.txt")); err == nil {
		t.Fatal("wrote through a symlink")
	}
}

func TestNoNetwork(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	res := run(t, s, fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d && echo CONNECTED; curl -s -m 3 http://127.0.0.1:%d/ && echo CONNECTED", port, port))
	noConnection(t, accepted, res)
}

func TestEveryDescendantDies(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.Timeout = time.Second
	marker := fmt.Sprintf("%d.%d", 900+os.Getpid()%99, time.Now().UnixNano()%1000)
	res := run(t, s, "setsid sleep "+marker+" & nohup sleep "+marker+" & sleep 30")
	if !res.TimedOut || res.ExitCode != -1 || !strings.Contains(res.Reason, "timeout") {
		t.Fatalf("not timed out: %+v", res)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		alive := sleepers(marker)
		if alive == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d descendants still alive after the timeout", alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sleepers counts live processes whose command line holds marker.
func sleepers(marker string) int {
	n := 0
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(raw), marker) {
			continue
		}
		if st, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); strings.Contains(string(st), ") Z ") {
			continue // a zombie is dead
		}
		n++
	}
	return n
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.MemoryBytes = 256 << 20
	// Doubling a string 30 times needs 1 GiB (it succeeds with a 4 GiB limit).
	res := run(t, s, `awk 'BEGIN { s = "x"; for (i = 0; i < 30; i++) s = s s; print length(s) }'`)
	if res.ExitCode == 0 || strings.Contains(res.Stdout, "1073741824") {
		t.Fatalf("a 1 GiB allocation succeeded under a 256 MiB limit: %+v", res)
	}
}

func TestNoSecretsInTheEnvironment(t *testing.T) {
	s, _ := spec(t)
	t.Setenv("OPENAI_API_KEY", "sk-live-should-not-leak")
	t.Setenv("TURNLOG_API_KEYS", "k=alice")
	res := run(t, s, "env")
	if strings.Contains(res.Stdout, "sk-live") || strings.Contains(res.Stdout, "TURNLOG") || !strings.Contains(res.Stdout, "PATH=") {
		t.Fatalf("environment: %s", res.Stdout)
	}
}

func TestOutputKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.OutputBytes = 100
	res := run(t, s, `echo START; head -c 100000 /dev/zero | tr '\0' x; echo; echo END`)
	if !strings.HasPrefix(res.Stdout, "START\n") || !strings.HasSuffix(res.Stdout, "END\n") || !strings.Contains(res.Stdout, "bytes cut]") ||
		!res.Truncated || !strings.Contains(res.Reason, "stdout:") {
		t.Fatalf("%+v", res)
	}
}

// TestMissingMechanismFailsClosed: a sandbox that cannot be set up does not run the
// command at all.
func TestMissingMechanismFailsClosed(t *testing.T) {
	t.Parallel()
	for mechanism, want := range map[string]string{
		sandbox.MechanismLandlock:   "landlock is not available",
		sandbox.MechanismBubblewrap: "bubblewrap is configured, and bwrap is not installed here",
		"chroot":                    `unknown sandbox mechanism "chroot"`,
	} {
		s, _ := spec(t)
		s.Mechanism, s.Unavailable = mechanism, mechanism
		res, err := sandbox.Run(context.Background(), s, "echo ran > ran.txt")
		if err == nil || !strings.Contains(err.Error(), want) || res != nil {
			t.Fatalf("%s: res %+v, err %v", mechanism, res, err)
		}
		if _, err := os.Stat(filepath.Join(s.Workspace, "ran.txt")); err == nil {
			t.Fatalf("%s: the command ran without its sandbox", mechanism)
		}
	}
}

// TestDeniedFilesInsideTheWorkspaceAreClosed: secrets inside the workspace read as
// empty to a command, even through a symlink, and stay intact for everyone else.
func TestDeniedFilesInsideTheWorkspaceAreClosed(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	for rel, content := range map[string]string{".env": "API_KEY=sk-live-secret", "keys/server.pem": "PRIVATE KEY", ".git/config": "[remote] token",
		".ssh/id_ed25519": "ssh key", "src/app.go": "package app"} {
		os.MkdirAll(filepath.Dir(filepath.Join(s.Workspace, rel)), 0o755)
		os.WriteFile(filepath.Join(s.Workspace, rel), []byte(content), 0o644)
	}
	os.Symlink(".env", filepath.Join(s.Workspace, "innocent"))
	res := run(t, s, "cat .env keys/server.pem .git/config innocent .ssh/id_ed25519 src/app.go; echo; awk '{print}' .env; echo overwritten > .env")
	for _, secret := range []string{"sk-live", "PRIVATE KEY", "token", "ssh key"} {
		if strings.Contains(res.Stdout, secret) {
			t.Fatalf("the command read %q: %+v", secret, res)
		}
	}
	if !strings.Contains(res.Stdout, "package app") {
		t.Fatalf("an ordinary file was hidden too: %+v", res)
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, ".env")); string(raw) != "API_KEY=sk-live-secret" {
		t.Fatalf(".env outside the sandbox is now %q", raw)
	}
}

// TestAbstractSocketsAreClosed: with the host's network (workspace-write), a host
// daemon's abstract unix socket still cannot be reached (Landlock's scope).
func TestAbstractSocketsAreClosed(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	if s.Mechanism == sandbox.MechanismBubblewrap {
		t.Skip("bubblewrap cannot scope abstract sockets (documented); it is for kernels without Landlock")
	}
	s.Network = true
	name := fmt.Sprintf("turnlog-test-%d", os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan string, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- name
			c.Close()
		}
	}()
	res := run(t, s, fmt.Sprintf("curl -s -m 3 --abstract-unix-socket %s http://x/ && echo CONNECTED; true", name))
	noConnection(t, accepted, res)
}

// TestHostProcessesAreHidden: a command sees no process outside its sandbox — not
// turnlog's own, whose environment holds the server's secrets.
func TestHostProcessesAreHidden(t *testing.T) {
	s, _ := spec(t)
	t.Setenv("TURNLOG_TEST_SECRET", "sk-live-in-the-server-only")
	res := run(t, s, fmt.Sprintf("tr '\\0' '\\n' < /proc/%d/environ; ls /proc/%d >/dev/null 2>&1 && echo VISIBLE; true", os.Getpid(), os.Getpid()))
	if strings.Contains(res.Stdout, "sk-live") || strings.Contains(res.Stdout, "VISIBLE") {
		t.Fatalf("the command sees turnlog's process: %+v", res)
	}
}

// TestNothingOfTheHelpersReachesTheCommand: the command holds its standard streams
// and no other descriptor the helper was handed (the masks, the report, the id
// mapping).
func TestNothingOfTheHelpersReachesTheCommand(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	os.WriteFile(filepath.Join(s.Workspace, ".env"), []byte("x"), 0o644)
	// (bash keeps its own copies at 10 and above while it redirects.)
	res := run(t, s, `for fd in 3 4 5 6 7 8 9; do { true <&$fd; } 2>/dev/null && echo "open $fd"; { true >&$fd; } 2>/dev/null && echo "open $fd"; done; echo checked`)
	if !strings.Contains(res.Stdout, "checked") || strings.Contains(res.Stdout, "open") {
		t.Fatalf("the command holds more than its standard streams: %+v", res)
	}
}

// TestDataDirIsWritableAndKept: a long-lived program's data directory is written at
// once and stays, while its workspace stays read-only and nothing else is writable.
func TestDataDirIsWritableAndKept(t *testing.T) {
	t.Parallel()
	ws, data := t.TempDir(), filepath.Join(t.TempDir(), "servers", "notes")
	if err := sandbox.PrepareDataDir(data); err != nil {
		t.Fatal(err)
	}
	for round, script := range []string{
		`echo first > "$TURNLOG_DATA_DIR/state"; { echo ws > ws.txt; } 2>/dev/null && echo ws-written; echo "$HOME"`,
		`cat "$HOME/state"; echo second >> "$TURNLOG_DATA_DIR/state"`,
	} {
		cmd, err := sandbox.Command(sandbox.Spec{Workspace: ws, WorkspaceReadOnly: true, DataDir: data, Mechanism: os.Getenv(mechanismEnv)}, []string{"bash", "-c", script})
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, out)
		}
		switch round {
		case 0:
			if strings.Contains(string(out), "ws-written") || strings.TrimSpace(string(out)) != data {
				t.Fatalf("round 0: %q", out)
			}
		case 1:
			if strings.TrimSpace(string(out)) != "first" {
				t.Fatalf("round 1 read %q", out)
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(data, "state"))
	if err != nil || string(raw) != "first\nsecond\n" {
		t.Fatalf("data on the host: %q %v", raw, err)
	}
	os.Chmod(data, 0o755)
	if _, err := sandbox.Command(sandbox.Spec{Workspace: ws, DataDir: data}, []string{"true"}); err == nil {
		t.Fatal("a data directory others can read was accepted")
	}
}

// TestConfiguredEnvironmentIsTheCommandsAlone: variables a tool's configuration gives
// reach the command only once it is confined and limited — not the helper (root in
// its namespaces), not the shell that sets the limits: a BASH_ENV, a PATH to a
// planted bash, an LD_PRELOAD change nothing before the command runs.
func TestConfiguredEnvironmentIsTheCommandsAlone(t *testing.T) {
	t.Parallel()
	ws, data := t.TempDir(), filepath.Join(t.TempDir(), "srv")
	if err := sandbox.PrepareDataDir(data); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(data, "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "bash"), []byte("#!/bin/sh\necho planted >> "+data+"/planted-bash-ran\nexec /bin/sh \"$@\"\n"), 0o755)
	os.WriteFile(filepath.Join(data, "bashenv"), []byte("echo ran >> "+data+"/bashenv-ran\n"), 0o644)
	for _, p := range []string{data, bin, filepath.Join(bin, "bash"), filepath.Join(data, "bashenv")} {
		os.Chown(p, sandbox.CommandUID, sandbox.CommandUID)
	}
	spec := sandbox.Spec{Workspace: ws, WorkspaceReadOnly: true, DataDir: data, Mechanism: os.Getenv(mechanismEnv),
		Env: []string{"PATH=" + bin + ":/usr/bin:/bin", "BASH_ENV=" + data + "/bashenv", "LD_PRELOAD=/nonexistent/turnlog-test.so", "GREETING=hej"}}
	cmd, err := sandbox.Command(spec, []string{"/bin/sh", "-c", `ulimit -t; echo "$GREETING $TURNLOG_DATA_DIR"`})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 3 || got[0] != fmt.Sprint(sandbox.ServerCPUSeconds) || got[1] != "hej" || got[2] != data {
		t.Fatalf("the command saw %q", out)
	}
	for _, marker := range []string{"planted-bash-ran", "bashenv-ran"} {
		if _, err := os.Stat(filepath.Join(data, marker)); err == nil {
			t.Errorf("%s: a configured variable acted before the command was limited", marker)
		}
	}
}
