package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

func workspace(t *testing.T) (*sandbox.Workspace, string, string) {
	t.Helper()
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "src")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside secret"), 0o644)
	os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=x"), 0o644)
	os.WriteFile(filepath.Join(ws, "src", "a.go"), []byte("package a\n"), 0o644)
	w, err := sandbox.OpenWorkspace(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, ws, outside
}

// TestPathsStayInside: lexical escapes, absolute paths, symlinks out of the workspace
// and symlinks onto denied files are all refused, with the reason.
func TestPathsStayInside(t *testing.T) {
	w, ws, outside := workspace(t)
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link-out"))
	os.Symlink(".env", filepath.Join(ws, "innocent"))
	os.Symlink(outside, filepath.Join(ws, "dir-out"))
	for p, why := range map[string]string{
		"../outside/secret.txt":              "outside the workspace",
		filepath.Join(outside, "secret.txt"): "outside the workspace",
		"/etc/passwd":                        "outside the workspace",
		".env":                               "denied by default",
		"src/../.env":                        "denied by default",
		"keys/server.pem":                    "denied by default",
		".git/config":                        "denied by default",
		"link-out":                           "symlink to outside",
		"innocent":                           "symlink to .env",
		"dir-out/secret.txt":                 "symlink to outside",
		"":                                   "empty",
	} {
		if _, _, err := w.Open(p); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("open %q: err = %v, want it to say %q", p, err, why)
		}
	}
	if f, rel, err := w.Open("src/../src/a.go"); err != nil || rel != "src/a.go" {
		t.Fatalf("an ordinary file: %v %q", err, rel)
	} else {
		f.Close()
	}
}

// TestSwappedSymlinkIsRefusedAtOpen: a file that passes the check is swapped for a
// symlink out of the workspace (or onto a denied file) before the open: the open
// refuses it and nothing outside is read.
func TestSwappedSymlinkIsRefusedAtOpen(t *testing.T) {
	w, ws, outside := workspace(t)
	for target, why := range map[string]string{
		filepath.Join(outside, "secret.txt"): "outside the workspace",
		".env":                               "denied by default", // relative, inside: os.Root follows it; the check after the open refuses it
	} {
		victim := filepath.Join(ws, "notes.txt")
		os.WriteFile(victim, []byte("harmless"), 0o644)
		sandbox.SetBeforeOpen(func(string) {
			os.Remove(victim)
			os.Symlink(target, victim)
		})
		f, _, err := w.Open("notes.txt")
		sandbox.SetBeforeOpen(nil)
		if err == nil {
			raw := make([]byte, 64)
			n, _ := f.Read(raw)
			f.Close()
			t.Fatalf("the swapped symlink to %s was opened and read %q", target, raw[:n])
		}
		if !strings.Contains(err.Error(), why) {
			t.Fatalf("swapped to %s: err = %v, want %q", target, err, why)
		}
		os.Remove(victim)
	}
}

// TestWritesStayOutOfGitAndSecrets: a tool's write never lands in a .git (the
// workspace's, through a symlink, or a new repository's) nor, through a symlinked
// directory, in a denied place — and a refused write leaves nothing behind.
func TestWritesStayOutOfGitAndSecrets(t *testing.T) {
	w, ws, _ := workspace(t)
	os.MkdirAll(filepath.Join(ws, ".git/hooks"), 0o755)
	os.MkdirAll(filepath.Join(ws, ".ssh"), 0o700)
	os.Symlink(".git/hooks", filepath.Join(ws, "hooks-link"))
	os.Symlink(".git", filepath.Join(ws, "git-link"))
	os.Symlink(".ssh", filepath.Join(ws, "ssh-link"))
	// Dangling symlinks a command may have left: a create would follow them.
	os.Symlink(".git/commondir", filepath.Join(ws, "dangling-commondir"))
	os.Symlink("sub/.git", filepath.Join(ws, "dangling-gitfile"))
	os.Symlink(".git/hooks/post-checkout", filepath.Join(ws, "dangling-hook"))
	for _, p := range []string{".git/commondir", ".git/objects/info/alternates", ".GIT/config", "sub/.git/config", "sub/.git", "hooks-link/pre-commit",
		"git-link/commondir", "ssh-link/authorized_keys", "ssh-link/new/dir/file", "dangling-commondir", "dangling-gitfile", "dangling-hook"} {
		if f, _, err := w.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644); err == nil {
			f.Close()
			t.Errorf("write %s was allowed", p)
		}
	}
	for _, dir := range []string{".git/objects/info", "sub/.git", "hooks-link/x", "git-link/x", "ssh-link/new/dir"} {
		if err := w.MkdirAll(dir); err == nil {
			t.Errorf("mkdir %s was allowed", dir)
		}
	}
	for _, left := range []string{".git/commondir", ".git/hooks/pre-commit", ".git/hooks/post-checkout", ".ssh/authorized_keys", ".ssh/new", "sub/.git", ".git/objects"} {
		if _, err := os.Lstat(filepath.Join(ws, left)); err == nil {
			t.Errorf("a refused write left %s behind", left)
		}
	}
}

// TestHardLinksToSecretsAreClosed: a secret under another name (a hard link) is as
// closed to the file tools as under its own.
func TestHardLinksToSecretsAreClosed(t *testing.T) {
	w, ws, _ := workspace(t)
	os.MkdirAll(filepath.Join(ws, "node_modules/p"), 0o755)
	os.Link(filepath.Join(ws, ".env"), filepath.Join(ws, "notes.txt"))
	os.WriteFile(filepath.Join(ws, "node_modules/p/.env"), []byte("TOKEN=deep"), 0o644)
	os.Link(filepath.Join(ws, "node_modules/p/.env"), filepath.Join(ws, "src/readme"))
	for _, p := range []string{"notes.txt", "src/readme", "node_modules/p/.env"} {
		if f, _, err := w.Open(p); err == nil {
			f.Close()
			t.Errorf("%s was opened", p)
		} else if !strings.Contains(err.Error(), "denied") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if f, _, err := w.Open("src/a.go"); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
}
