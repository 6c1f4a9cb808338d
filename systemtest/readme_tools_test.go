package systemtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeOwnTools runs the README's "Your own agent" section as written: its files
// (the Python receiver, the command tool, agent.yaml) in a folder, its first shell
// block (start the receiver), then its second (the config check, the turns, the
// approval, the guardrail), whose comments say what each line prints (a line without
// one prints nothing). Only the port is moved to a free one.
func TestReadmeOwnTools(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Your own agent")
	if !ok {
		t.Fatal("README has no \"Your own agent\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	dir := t.TempDir()
	files := regexp.MustCompile("(?s)```[a-z]+ ([\\w/.]+)\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(files) != 3 {
		t.Fatalf("found %d files in the section, want 3", len(files))
	}
	for _, f := range files {
		path := filepath.Join(dir, f[1])
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(f[2], "8091", port)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) != 2 {
		t.Fatalf("found %d shell blocks, want 2", len(blocks))
	}
	// ./turnlog is this test binary acting as the turnlog binary.
	shim := fmt.Sprintf("#!/bin/sh\n%s=1 CRASH_DIR=%s exec %s \"$@\"\n", childEnv, dir, os.Args[0])
	os.WriteFile(filepath.Join(dir, "turnlog"), []byte(shim), 0o755)
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(blocks[1][1]), "\n") {
		if _, comment, ok := strings.Cut(line, "   # "); ok {
			want = append(want, strings.TrimSpace(comment))
		}
	}
	if len(want) < 6 {
		t.Fatalf("only %d commented lines in the section's turns", len(want))
	}
	script := blocks[0][1] +
		fmt.Sprintf("trap 'kill %%1' EXIT\nuntil (echo > /dev/tcp/127.0.0.1/%s) 2>/dev/null; do sleep 0.05; done\n", port) +
		blocks[1][1]
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TURNLOG_DB=", "TURNLOG_CONFIG=", "TURNLOG_APP=")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("the README's commands: %v\n%s\n%s", err, out, stderr)
	}
	if got := strings.Split(strings.TrimSpace(string(out)), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the README's commands printed\n%s\nwhere its comments say\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
