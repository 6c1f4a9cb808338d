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
		"[x]/.env", ".git/hooks/", "./.env", "a//.env", ".pem", "dir.pem/file", "a/x.key", "id_", "x/id_/y", ".git", "a/.git/hooks", ".gitconfig",
		"id_generator.go", "src/id_map.go", "id_rsa.pub", "a/id_ed25519_sk", "id_ecdsa", "id_dsa",
		".git/modules/lib/config", ".git/modules/lib/foo/config", "a/.git/modules/x/config", ".git/modules/config", "config", ".git/modules/x/configs",
		".aws/credentials", "home/.aws/credentials", ".aws/config", ".aws/sso/cache/x.json", ".git-credentials", "x/.config/git/credentials",
		".netrc", "_netrc", ".docker/config.json", ".kube/config", "kube/config", ".config/gh/hosts.yml", ".pgpass", ".config/gcloud/credentials.db",
		".azure/msal_token_cache.json", ".cargo/credentials.toml", ".npmrc", ".pypirc", "pip.conf", ".terraform.d/credentials.tfrc.json", ".vault-token"}
	for _, p := range paths {
		want := ""
		for _, pat := range DefaultDenied() {
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

// TestTheDenyListCoversCredentialStores: the credential stores of the tools people
// use are denied at any depth, ssh keys by their names (id_generator.go is not one),
// and .npmrc-like files only when they hold credentials.
func TestTheDenyListCoversCredentialStores(t *testing.T) {
	t.Parallel()
	for _, p := range []string{".aws/credentials", "home/me/.aws/credentials", ".git-credentials", "x/.netrc", ".docker/config.json", "a/.kube/config",
		".config/gh/hosts.yml", ".pgpass", ".git/modules/lib/foo/config", "vendor/x/.git/modules/y/config", "id_rsa", "id_rsa.pub", "keys/id_ed25519_sk",
		".config/gcloud/application_default_credentials.json", ".cargo/credentials.toml", ".vault-token"} {
		if DeniedBy(p) == "" {
			t.Errorf("%s is not denied", p)
		}
	}
	for _, p := range []string{"id_generator.go", "src/id_map.go", "config", "kube/config", ".aws/config", ".npmrc", "pip.conf", "notes.txt"} {
		if pat := DeniedBy(p); pat != "" {
			t.Errorf("%s is denied by %s", p, pat)
		}
	}
	for name, content := range map[string]string{".npmrc": "//registry.npmjs.org/:_authToken=npm_x\n", ".pypirc": "[pypi]\npassword = x\n",
		"pip.conf": "[global]\nindex-url = https://me:s3cret@pypi.example/simple\n"} {
		if HoldsCredentials(name, []byte(content)) == "" {
			t.Errorf("%s with credentials is not denied", name)
		}
	}
	for name, content := range map[string]string{".npmrc": "save-exact=true\n", "pip.conf": "[global]\nindex-url = https://pypi.example/simple\n", "notes.txt": "password"} {
		if why := HoldsCredentials(name, []byte(content)); why != "" {
			t.Errorf("%s without credentials: %s", name, why)
		}
	}
}
