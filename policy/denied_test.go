package policy

import (
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// TestDeniedByAgreesWithDoublestar: the shape-by-shape matcher decides every path as
// doublestar does on the default-deny patterns.
func TestDeniedByAgreesWithDoublestar(t *testing.T) {
	t.Parallel()
	paths := []string{".env", ".env.local", "a/.env", "a/b/.envrc", "env", "a.env", "x.pem", "a/b/c.pem", "pem", "k.key", "a/id_rsa", "id_ed25519.pub",
		"my_id_rsa", ".ssh", ".ssh/config", "a/.ssh/known_hosts", "a/.ssh", "ssh/x", ".git/config", "a/.git/config", ".git/config/x", "git/config",
		".git/hooks", ".git/hooks/pre-commit", "a/.git/hooks/x/y", ".git/hooksx/y", "src/main.go", "node_modules/p/.env", "a/b/c/d/e/.env.prod",
		"[x]/.env", ".git/hooks/", "./.env", "a//.env", ".pem", "dir.pem/file", "a/x.key", "id_", "x/id_/y", ".git", "a/.git/hooks", ".gitconfig"}
	for _, p := range paths {
		want := ""
		for _, pat := range DefaultDenied {
			if m, _ := doublestar.Match(pat, cleanRel(p)); m {
				want = pat
				break
			}
		}
		if got := DeniedBy(p); got != want {
			t.Errorf("%q: DeniedBy %q, doublestar %q", p, got, want)
		}
		parts := splitClean(p)
		if want != "" && len(parts) > 0 && !MayBeDenied(parts[len(parts)-1]) {
			// A denied path is one whose last component, or a directory above it, may be.
			above := false
			for _, c := range parts[:len(parts)-1] {
				above = above || MayBeDenied(c)
			}
			if !above {
				t.Errorf("%q is denied, yet MayBeDenied passes every component of it", p)
			}
		}
	}
}

func cleanRel(p string) string {
	out := ""
	for _, part := range splitClean(p) {
		if out != "" {
			out += "/"
		}
		out += part
	}
	return out
}

func splitClean(p string) []string {
	var parts []string
	cur := ""
	for _, c := range p + "/" {
		if c == '/' {
			if cur != "" && cur != "." {
				parts = append(parts, cur)
			}
			cur = ""
			continue
		}
		cur += string(c)
	}
	return parts
}

func BenchmarkDeniedBy(b *testing.B) {
	for i := 0; i < b.N; i++ {
		DeniedBy("node_modules/pkg123/lib/f42.js")
	}
}
