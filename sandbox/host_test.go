package sandbox_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
	"golang.org/x/sys/unix"
)

// These tests attack the host through what a command leaves behind in its workspace
// (a setuid file, a git repository) and check it from the host, as a person would.

func TestCommandsAreNotRoot(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	res := run(t, s, "id -u; id -g; cat /etc/shadow && echo READ-SHADOW; cat /etc/gshadow && echo READ-GSHADOW; true")
	if want := fmt.Sprintf("%d\n%d\n", sandbox.CommandUID, sandbox.CommandUID); !strings.HasPrefix(res.Stdout, want) {
		t.Fatalf("the command's ids: %q, want %q", res.Stdout, want)
	}
	if strings.Contains(res.Stdout, "READ-") {
		t.Fatalf("a command read the host's password hashes: %+v", res)
	}
}

// TestSetuidNeverReachesTheHost: every way a command has of leaving a setuid, setgid
// or capability-bearing file leaves, on the host, a file that gives an unprivileged
// user who runs it nothing.
func TestSetuidNeverReachesTheHost(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	sh, _ := os.ReadFile("/bin/sh")
	tw.WriteHeader(&tar.Header{Name: "from-tar", Mode: 0o4755, Size: int64(len(sh)), Typeflag: tar.TypeReg})
	tw.Write(sh)
	tw.WriteHeader(&tar.Header{Name: "sgid-dir/", Mode: 0o2775, Typeflag: tar.TypeDir})
	tw.Close()
	os.WriteFile(filepath.Join(s.Workspace, "payload.tar"), archive.Bytes(), 0o644)
	// A setuid program the operator keeps in the workspace: copying it with its mode
	// must not give the copy the bit.
	os.WriteFile(filepath.Join(s.Workspace, "operator-tool"), sh, 0o755)
	os.Chmod(filepath.Join(s.Workspace, "operator-tool"), 0o4755)
	res := run(t, s, strings.Join([]string{
		`python3 -c 'import shutil, os; shutil.copy("/bin/bash", "py-bash"); os.chmod("py-bash", 0o4755)'`,
		`install -m 4755 /bin/sh installed`,
		`cp /bin/sh chmodded && chmod u+s,g+s chmodded`,
		`tar -xpf payload.tar`,
		`cp -p operator-tool copied-p`,
		`cp /bin/sh capped && setcap cap_setuid,cap_dac_override+ep capped`,
		`python3 -c 'import os; os.setxattr("capped", "security.capability", bytes(20))'`,
		`mkdir sgid && chmod 2777 sgid`,
		`ls -l`,
	}, "; "))
	made := []string{"py-bash", "installed", "chmodded", "from-tar", "copied-p", "capped"}
	for _, name := range made {
		p := filepath.Join(s.Workspace, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s was not made (the attack must run for the test to mean anything): %v\n%+v", name, err, res)
		}
		if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			t.Errorf("%s is %v on the host", name, fi.Mode())
		}
		if n, _ := unix.Lgetxattr(p, "security.capability", make([]byte, 64)); n > 0 {
			t.Errorf("%s carries a file capability on the host", name)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid == sandbox.CommandUID {
			t.Errorf("%s is owned by the sandbox's uid on the host", name)
		}
		// Run by an unprivileged user, it must not give euid 0.
		if name != "copied-p" && name != "from-tar" && name != "installed" && name != "chmodded" && name != "capped" && name != "py-bash" {
			continue
		}
		out, _ := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", p, "-p", "-c", "id -u").CombinedOutput()
		if strings.TrimSpace(string(out)) == "0" {
			t.Errorf("running %s as nobody gives euid 0", name)
		}
	}
	for _, dir := range []string{"sgid", "sgid-dir"} {
		if fi, err := os.Stat(filepath.Join(s.Workspace, dir)); err != nil || fi.Mode()&fs.ModeSetgid != 0 {
			t.Errorf("%s: %v %v", dir, fi, err)
		}
	}
}

// TestGitCannotBeTurnedAgainstTheHost: a command that plants git configuration —
// by replacing .git, pointing it elsewhere, or making a repository of its own — does
// not make a person's `git status` on the host run anything.
func TestGitCannotBeTurnedAgainstTheHost(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for this test")
	}
	for name, attack := range map[string]string{
		"replace .git": `mv .git .git-old; mkdir g; cp -r .git-old/objects .git-old/refs .git-old/HEAD g/ || cp -r .git/objects .git/refs .git/HEAD g/; printf '[core]\n\tfsmonitor = "touch MARKER"\n' > g/config; mv g .git || { rm -rf .git; mv g .git; }`,
		"commondir":    `mkdir -p evil/objects/info evil/refs/heads; printf '[core]\n\tfsmonitor = "touch MARKER"\n' > evil/config; touch evil/objects/info/x evil/refs/heads/x; echo ../evil > .git/commondir`,
		"config":       `git config core.fsmonitor "touch MARKER"; printf '[core]\n\tfsmonitor = "touch MARKER"\n' >> .git/config; echo 'touch MARKER' > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout`,
		"nested repo":  `mkdir -p sub && cd sub && git init -q && git config core.fsmonitor "touch MARKER" && touch f`,
		"gitdir file":  `mkdir -p other/r && git init -q other/r && git -C other/r config core.fsmonitor "touch MARKER"; mkdir -p sub2 && echo "gitdir: ../other/r/.git" > sub2/.git`,
		// A directory git takes for a repository without any .git name (HEAD, objects
		// and refs), below the workspace and as the workspace itself.
		"bare lookalike":   `mkdir -p sub/objects sub/refs/heads sub/hooks; echo 'ref: refs/heads/main' > sub/HEAD; printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch MARKER"\n' > sub/config; printf '#!/bin/sh\ntouch MARKER\n' > sub/hooks/post-checkout; chmod +x sub/hooks/post-checkout`,
		"bare at the root": `mkdir -p objects refs/heads; echo 'ref: refs/heads/main' > HEAD; printf '[core]\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch MARKER"\n' > config`,
		// objects and refs as symlinks (git follows them), and through a commondir.
		"symlinked lookalike": `mkdir -p sub/o sub/r/heads; cd sub; ln -s o objects; ln -s r refs; echo 'ref: refs/heads/main' > HEAD; printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = '"${PWD%/sub}"'\n\tfsmonitor = "touch MARKER"\n' > config`,
		"commondir lookalike": `mkdir -p c/objects c/refs/heads; printf '[core]\n\trepositoryformatversion = 1\n\tfsmonitor = "touch MARKER"\n[extensions]\n\tworktreeConfig = true\n' > c/config; mkdir sub; printf '[core]\n\tbare = false\n\tworktree = '"$PWD"'\n' > sub/config.worktree; echo 'ref: refs/heads/main' > sub/HEAD; echo ../c > sub/commondir`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, outside := spec(t)
			marker := filepath.Join(outside, "owned")
			git := func(dir string, args ...string) string {
				cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+outside)
				out, _ := cmd.CombinedOutput()
				return string(out)
			}
			if !strings.Contains(name, "lookalike") && name != "bare at the root" {
				git(s.Workspace, "init", "-q")
				os.WriteFile(filepath.Join(s.Workspace, "README"), []byte("hello\n"), 0o644)
				git(s.Workspace, "-c", "user.name=t", "-c", "user.email=t@t", "add", "README")
				git(s.Workspace, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
			}
			res := run(t, s, strings.ReplaceAll(attack, "MARKER", marker))
			for _, dir := range []string{".", "sub", "sub2", "other/r"} {
				if _, err := os.Stat(filepath.Join(s.Workspace, dir)); err == nil {
					git(filepath.Join(s.Workspace, dir), "status")
					git(filepath.Join(s.Workspace, dir), "checkout", "-q", "-b", "x")
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("git on the host ran the command's planted code: %+v", res)
			}
			if out := git(s.Workspace, "log", "--oneline"); !strings.Contains(name, "lookalike") && name != "bare at the root" && !strings.Contains(out, "first") {
				t.Fatalf("the workspace's repository is damaged: %s", out)
			}
		})
	}
}

// TestGitWritesWhereAllowed: where the policy lets commands write repositories, a
// commit made inside reaches the host's repository — while git's config, hooks and
// pointers stay read-only and the attacks still run nothing on the host.
func TestGitWritesWhereAllowed(t *testing.T) {
	t.Parallel()
	s, outside := spec(t)
	s.GitWritable = true
	marker := filepath.Join(outside, "owned")
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", s.Workspace}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+outside)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(s.Workspace, "README"), []byte("hello\n"), 0o644)
	git("-c", "user.name=t", "-c", "user.email=t@t", "add", "README")
	git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
	// A submodule whose name holds a slash (git's default for one at lib/foo).
	sub := filepath.Join(s.Workspace, ".git", "modules", "lib", "foo")
	os.MkdirAll(filepath.Join(sub, "hooks"), 0o755)
	os.WriteFile(filepath.Join(sub, "config"), []byte("[core]\n"), 0o644)
	res := run(t, s, strings.ReplaceAll(`printf '[core]\n\tfsmonitor = "touch MARKER"\n' >> .git/modules/lib/foo/config; echo 'touch MARKER' > .git/modules/lib/foo/hooks/post-checkout
echo more >> README && git -c user.name=agent -c user.email=a@a commit -qam second && git branch feature
git config core.fsmonitor "touch MARKER" || echo REFUSED-CONFIG
echo ../evil > .git/commondir; mkdir -p evil; printf '[core]\n\tfsmonitor = "touch MARKER"\n' > evil/config
echo 'touch MARKER' > .git/hooks/post-checkout || echo REFUSED-HOOK
mkdir -p .git/info && echo x > .git/info/attributes || echo REFUSED-INFO
true`, "MARKER", marker))
	if !strings.Contains(res.Stdout, "REFUSED-CONFIG") || !strings.Contains(res.Stdout, "REFUSED-HOOK") {
		t.Fatalf("git's config or hooks were writable: %+v", res)
	}
	if log := git("log", "--oneline", "--all"); !strings.Contains(log, "second") || !strings.Contains(git("branch"), "feature") {
		t.Fatalf("the commit did not reach the host: %s\n%+v", log, res)
	}
	git("status")
	git("checkout", "-q", "feature")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("git on the host ran planted code: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace, ".git", "commondir")); err == nil {
		t.Fatalf(".git/commondir reached the host: %+v", res.Changes)
	}
	if raw, _ := os.ReadFile(filepath.Join(sub, "config")); string(raw) != "[core]\n" {
		t.Fatalf("a submodule's config reached the host: %q", raw)
	}
	if _, err := os.Stat(filepath.Join(sub, "hooks", "post-checkout")); err == nil {
		t.Fatal("a submodule's hook reached the host")
	}
}

// TestARepositorysOwnDotfilesRunNothing: known-safe git commands stay safe only
// because HOME is outside the workspace and git runs with a config turnlog controls.
// A read-only workspace's repository holds a .gitconfig (and a .config/git/config)
// naming a pager, an fsmonitor, a diff driver and an alias that each print a marker;
// git log, git status, git diff and git show inside the sandbox print none of them,
// with HOME or XDG_CONFIG_HOME pointed at the workspace too.
func TestARepositorysOwnDotfilesRunNothing(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed for this test")
	}
	s, outside := spec(t)
	s.WorkspaceReadOnly = true
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", s.Workspace, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+outside)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q")
	os.WriteFile(filepath.Join(s.Workspace, "a.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(s.Workspace, ".gitattributes"), []byte("*.txt diff=planted\n"), 0o644)
	git("add", "a.txt", ".gitattributes")
	git("commit", "-qm", "first")
	os.WriteFile(filepath.Join(s.Workspace, "a.txt"), []byte("two\n"), 0o644)
	planted := "[core]\n\tpager = echo PLANTED-PAGER\n\tfsmonitor = echo PLANTED-FSMONITOR >&2\n" +
		"[diff \"planted\"]\n\ttextconv = echo PLANTED-TEXTCONV\n\tcommand = echo PLANTED-DIFF\n" +
		"[alias]\n\tlog = !echo PLANTED-ALIAS\n[pager]\n\tlog = echo PLANTED-PAGER\n"
	os.WriteFile(filepath.Join(s.Workspace, ".gitconfig"), []byte(planted), 0o644)
	os.MkdirAll(filepath.Join(s.Workspace, ".config", "git"), 0o755)
	os.WriteFile(filepath.Join(s.Workspace, ".config", "git", "config"), []byte(planted), 0o644)
	res := run(t, s, `git -p log --oneline; git status; git -p diff; git show HEAD; HOME=$PWD git -p log; XDG_CONFIG_HOME=$PWD/.config git status; git diff --stat`)
	out := res.Stdout + res.Stderr
	if strings.Contains(out, "PLANTED") {
		t.Fatalf("git ran what the repository's own dotfiles planted:\n%s", out)
	}
	if !strings.Contains(out, "first") || !strings.Contains(out, "a.txt") {
		t.Fatalf("git did not run as asked:\n%s", out)
	}
}
