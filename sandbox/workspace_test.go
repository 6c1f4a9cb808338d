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
