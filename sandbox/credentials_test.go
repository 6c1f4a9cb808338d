package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

// credentialStores are files where tools keep credentials, each holding a marker a
// test looks for; readable are files that look alike and hold none.
var (
	credentialStores = map[string]string{
		".aws/credentials":             "[default]\naws_secret_access_key = sk-live-aws\n",
		"sub/.git-credentials":         "https://me:sk-live-git@github.com\n",
		".netrc":                       "machine x login me password sk-live-netrc\n",
		".docker/config.json":          `{"auths":{"x":{"auth":"sk-live-docker"}}}`,
		"deploy/.kube/config":          "token: sk-live-kube\n",
		".config/gh/hosts.yml":         "oauth_token: sk-live-gh\n",
		".pgpass":                      "*:*:*:me:sk-live-pg\n",
		".npmrc":                       "//registry.npmjs.org/:_authToken=sk-live-npm\n",
		"py/pip.conf":                  "[global]\nindex-url = https://me:sk-live-pip@pypi.example/simple\n",
		".git/modules/lib/config":      "[remote]\nurl = https://me:sk-live-module@git.example/x\n",
		"keys/id_ecdsa":                "sk-live-key\n",
		".config/gcloud/access_tokens": "sk-live-gcloud\n",
	}
	readable = map[string]string{
		"id_generator.go": "package id // plain-text\n",
		"web/.npmrc":      "save-exact=true # plain-text\n",
		".aws/config":     "[default]\nregion = plain-text\n",
	}
)

func plantCredentials(t *testing.T, ws string) {
	t.Helper()
	for rel, content := range credentialStores {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755)
		os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o600)
	}
	for rel, content := range readable {
		os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755)
		os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644)
	}
}

// TestCredentialStoresAreClosed: the credential stores tools keep at any depth
// read as empty to a command, and are refused to the file tools; files that only
// look alike (an id_ prefix, an .npmrc without a token) are read as they are.
func TestCredentialStoresAreClosed(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	plantCredentials(t, s.Workspace)
	var names []string
	for rel := range credentialStores {
		names = append(names, rel)
	}
	for rel := range readable {
		names = append(names, rel)
	}
	res := run(t, s, "cat "+strings.Join(names, " ")+" 2>/dev/null; true")
	if strings.Contains(res.Stdout, "sk-live") {
		t.Fatalf("a command read a credential: %s", res.Stdout)
	}
	if got := strings.Count(res.Stdout, "plain-text"); got != len(readable) {
		t.Fatalf("%d of %d look-alikes were readable: %s", got, len(readable), res.Stdout)
	}
	ws, err := sandbox.OpenWorkspace(s.Workspace)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for rel := range credentialStores {
		if f, _, err := ws.Open(rel); err == nil {
			f.Close()
			t.Errorf("the file tools opened %s", rel)
		}
	}
	for rel := range readable {
		f, _, err := ws.Open(rel)
		if err != nil {
			t.Errorf("the file tools refused %s: %v", rel, err)
			continue
		}
		f.Close()
	}
	// Through a symlink of a credential file's name, to a file of another name.
	os.MkdirAll(filepath.Join(s.Workspace, "conf"), 0o755)
	os.WriteFile(filepath.Join(s.Workspace, "conf", "npm-settings"), []byte("//r/:_authToken=sk-live-linked\n"), 0o600)
	os.MkdirAll(filepath.Join(s.Workspace, "app"), 0o755)
	os.Symlink("../conf/npm-settings", filepath.Join(s.Workspace, "app", ".npmrc"))
	if res := run(t, s, "cat app/.npmrc conf/npm-settings; true"); strings.Contains(res.Stdout, "sk-live") {
		t.Fatalf("a credential file reached through a symlink was readable: %s", res.Stdout)
	}
	if f, _, err := ws.Open("app/.npmrc"); err == nil {
		f.Close()
		t.Fatal("the file tools opened a credential file through a symlink")
	}
	// A token added to a settled directory's .npmrc later is closed too.
	os.WriteFile(filepath.Join(s.Workspace, "web/.npmrc"), []byte("//r/:_authToken=sk-live-later\n"), 0o644)
	if res := run(t, s, "cat web/.npmrc; true"); strings.Contains(res.Stdout, "sk-live") {
		t.Fatalf("a token written after the first command was readable: %s", res.Stdout)
	}
}

// TestHomeIsNotTheWorkspace: a command's HOME lies outside its workspace, so a
// repository's own .gitconfig is not its user's configuration; git reads none of
// the system's, and turnlog's as its user's.
func TestHomeIsNotTheWorkspace(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	os.WriteFile(filepath.Join(s.Workspace, ".gitconfig"), []byte("[user]\n\tname = planted\n[alias]\n\tst = !touch pwned\n"), 0o644)
	res := run(t, s, `echo "home=$HOME"; git config --global user.name; git config --show-origin --global user.name; echo "nosystem=$GIT_CONFIG_NOSYSTEM"; touch "$HOME/kept"`)
	if strings.Contains(res.Stdout, "home="+s.Workspace+"\n") || strings.Contains(res.Stdout, "planted") {
		t.Fatalf("the workspace is the command's home: %s", res.Stdout)
	}
	if !strings.Contains(res.Stdout, "turnlog\n") || !strings.Contains(res.Stdout, "nosystem=1") {
		t.Fatalf("git's configuration is not turnlog's: %+v", res)
	}
	// A home of the workspace's own, kept between commands.
	home := filepath.Join(t.TempDir(), "home")
	if err := sandbox.PrepareDataDir(home); err != nil {
		t.Fatal(err)
	}
	s.Home = home
	run(t, s, `echo remembered > "$HOME/.history"`)
	if res := run(t, s, `cat "$HOME/.history"; echo "home=$HOME"`); !strings.Contains(res.Stdout, "remembered\nhome="+home) {
		t.Fatalf("the home was not kept: %+v", res)
	}
}
