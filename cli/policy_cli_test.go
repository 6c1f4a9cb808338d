package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyCheck: `turnlog policy check` prints the decision, the level, every command
// found with its own classification and the rule that fired, and exits 0 / 3 / 4.
func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, tc := range []struct {
		args   []string
		status int
		says   []string
	}{
		{[]string{"--", "go test ./..."}, 0, []string{"decision: allow", "go test ./...  opaque  L2  allow"}},
		{[]string{"--", "rm -rf build"}, 3, []string{"decision: require_approval", "level:    L4"}},
		{[]string{"--", "curl https://example.com"}, 4, []string{"rule:     default:network-off:L3"}},
		{[]string{"--", "ls; rm -rf / && echo $(curl evil)"}, 4, []string{"decision: deny", "rule:     default-deny",
			"rm -rf /", "curl evil", "L3", "outside the workspace"}},
		{[]string{"--", "curl https://proxy.golang.org/x/@v/list"}, 0, []string{"rule:     go-proxy"}},
		{[]string{"--", "find . -name '*.tmp' -delete"}, 3, []string{"rule:     review-deletes", "instead:  move files"}},
		{[]string{"--", "git push origin main"}, 4, []string{"rule:     no-push", "instead:  "}},
		{[]string{"--", "bash -c 'timeout 5 rm -rf /'"}, 4, []string{"(via bash -c, timeout)"}},
		{[]string{"--tool", "bash", "--args", `{"command":"cat .env"}`}, 4, []string{"denied by default"}},
		{[]string{"--json", "--", "ls"}, 0, []string{`"decision": "allow"`, `"level": "L0"`}},
	} {
		args := append([]string{"policy", "check", "--config", "examples/coder.yaml", "--app", "coder", "--workspace", ws}, tc.args...)
		out, _, err := runCLI(t, args...)
		if got := ExitCode(err); got != tc.status {
			t.Fatalf("%v: exit %d (%v), want %d\n%s", tc.args, got, err, tc.status, out)
		}
		for _, s := range tc.says {
			if !strings.Contains(out, s) {
				t.Fatalf("%v: output lacks %q:\n%s", tc.args, s, out)
			}
		}
	}
	if _, _, err := runCLI(t, "policy", "check", "--app", "nope", "--", "ls"); ExitCode(err) != 2 {
		t.Fatalf("an unknown app: %v", err)
	}
}

// TestDoctor: doctor probes every mechanism for real and says what each app gets.
func TestDoctor(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, "doctor", "--config", "examples/coder.yaml")
	for _, want := range []string{"landlock", "kernel ABI", "pid+net namespaces", "network proxy namespace", "process limit", "apps:", "coder: mode network-off, network off — available", "unprivileged uid", "seccomp filter", "cgroups"} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("doctor lacks %q (%v):\n%s", want, err, out)
		}
	}
	// Every mechanism this machine needs works here (bubblewrap only where CI installs it).
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "missing") && (!strings.HasPrefix(line, "bubblewrap") || os.Getenv("TURNLOG_REQUIRE_BWRAP") != "") {
			t.Fatalf("missing on this machine: %s\n%s", line, out)
		}
	}
}

// TestHostNetworkIsLoudAndNeverDev: an app whose commands get the machine's network
// is warned of by doctor, and serve refuses it together with --dev (a command could
// answer its own approvals through an API that needs no key).
func TestHostNetworkIsLoudAndNeverDev(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("examples/coder.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, ws := t.TempDir(), t.TempDir()
	cfg := filepath.Join(dir, "agent.yaml")
	yaml := strings.Replace(string(raw), "      mode: network-off\n", "      mode: workspace-write\n      network: host\n      workspace: "+ws+"\n", 1)
	if yaml == string(raw) {
		t.Fatal("examples/coder.yaml changed shape")
	}
	os.WriteFile(cfg, []byte(strings.ReplaceAll(yaml, "skills: [skills]", "skills: []")), 0o644)
	out, _, err := runCLI(t, "doctor", "--config", cfg)
	if err != nil || !strings.Contains(out, "coder: mode workspace-write, network host") || !strings.Contains(out, "WARNING: commands reach the machine's network") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	_, stderr, err := runCLI(t, "serve", "--dev", "--config", cfg, "--db", filepath.Join(dir, "t.db"), "--addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "refused together with --dev") {
		t.Fatalf("serve --dev with network: host: %v\n%s", err, stderr)
	}
}

// TestDoctorWarnsOfSecretsInGitHistory: a workspace whose git history holds files
// the default-deny list masks — committed once, removed since — is named by doctor
// with those files, since any command the policy allows can read them through
// git's objects.
func TestDoctorWarnsOfSecretsInGitHistory(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("examples/coder.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, ws := t.TempDir(), t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", ws, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=sk-live"), 0o644)
	os.MkdirAll(filepath.Join(ws, "deploy"), 0o755)
	os.WriteFile(filepath.Join(ws, "deploy", "id_rsa"), []byte("key"), 0o644)
	os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main"), 0o644)
	git("add", ".")
	git("commit", "-qm", "first")
	git("rm", "-q", ".env", "deploy/id_rsa")
	git("commit", "-qm", "oops")
	cfg := filepath.Join(dir, "agent.yaml")
	yaml := strings.Replace(string(raw), "      mode: network-off\n", "      mode: network-off\n      workspace: "+ws+"\n      workspace_scope: shared\n", 1)
	os.WriteFile(cfg, []byte(strings.ReplaceAll(yaml, "skills: [skills]", "skills: []")), 0o644)
	out, _, err := runCLI(t, "doctor", "--config", cfg)
	if err != nil || !strings.Contains(out, "the git history of "+ws+" holds .env, deploy/id_rsa") || strings.Contains(out, "main.go") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
}
