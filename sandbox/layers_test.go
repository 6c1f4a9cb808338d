package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnlog/turnlog/sandbox"
)

// TestWritesReachTheWorkspace: what a command writes, renames and deletes is in the
// workspace afterwards, owned by the workspace's owner, with its times, and the
// result lists it.
func TestWritesReachTheWorkspace(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	w := s.Workspace
	for rel, content := range map[string]string{"keep.txt": "keep", "edit.txt": "one\n", "gone.txt": "x", "olddir/a.txt": "a", "tree/b/c.txt": "c", "replaced/x": "x"} {
		os.MkdirAll(filepath.Dir(filepath.Join(w, rel)), 0o755)
		os.WriteFile(filepath.Join(w, rel), []byte(content), 0o644)
	}
	os.Symlink("keep.txt", filepath.Join(w, "link"))
	res := run(t, s, strings.Join([]string{
		"echo two >> edit.txt", "rm gone.txt", "mv olddir newdir", "rm -rf tree", "echo new > made.txt",
		"mkdir -p deep/er && echo d > deep/er/f", "touch -d 2001-02-03T04:05:06Z dated", "chmod 0600 keep.txt",
		"rm -rf replaced && mkdir replaced && echo y > replaced/y", "ln -sf made.txt link", "mkfifo fifo",
	}, " && "))
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	read := func(rel string) string {
		raw, err := os.ReadFile(filepath.Join(w, rel))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(raw)
	}
	for rel, want := range map[string]string{"edit.txt": "one\ntwo\n", "newdir/a.txt": "a", "made.txt": "new\n", "deep/er/f": "d\n", "keep.txt": "keep", "replaced/y": "y\n", "link": "new\n"} {
		if got := read(rel); got != want {
			t.Errorf("%s: %q, want %q", rel, got, want)
		}
	}
	for _, rel := range []string{"gone.txt", "olddir", "tree", "replaced/x", "fifo"} {
		if _, err := os.Lstat(filepath.Join(w, rel)); err == nil {
			t.Errorf("%s is still there", rel)
		}
	}
	if fi, err := os.Stat(filepath.Join(w, "dated")); err != nil || !fi.ModTime().Equal(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)) {
		t.Errorf("dated: %v %v", fi, err)
	}
	if fi, _ := os.Stat(filepath.Join(w, "keep.txt")); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("keep.txt: %v", fi)
	}
	var st syscall.Stat_t
	syscall.Lstat(filepath.Join(w, "made.txt"), &st)
	var ws syscall.Stat_t
	syscall.Stat(w, &ws)
	if st.Uid != ws.Uid || st.Gid != ws.Gid {
		t.Errorf("made.txt is owned by %d:%d, the workspace by %d:%d", st.Uid, st.Gid, ws.Uid, ws.Gid)
	}
	if res.Changes == nil || res.Changes.Count == 0 || !strings.Contains(strings.Join(res.Changes.Paths, " "), "made.txt") {
		t.Fatalf("changes: %+v", res.Changes)
	}
	if len(res.Changes.Refused) != 1 || res.Changes.Refused[0].Path != "fifo" {
		t.Fatalf("refused: %+v", res.Changes.Refused)
	}
}

// TestGitIsReadOnlyInside: a command cannot rename, replace or write .git — any
// repository's, at any depth — not even for the time it runs.
func TestGitIsReadOnlyInside(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	for _, rel := range []string{".git/HEAD", ".git/objects/x", "vendor/lib/.git/HEAD"} {
		os.MkdirAll(filepath.Dir(filepath.Join(s.Workspace, rel)), 0o755)
		os.WriteFile(filepath.Join(s.Workspace, rel), []byte("ref: refs/heads/main\n"), 0o644)
	}
	res := run(t, s, `for c in "mv .git moved" "rm -rf .git" "touch .git/commondir" "echo x >> .git/HEAD" "mkdir .git/info" "mv vendor/lib/.git vendor/lib/g" "touch vendor/lib/.git/config" "rm .git/objects/x"; do (eval "$c") 2>/dev/null && echo "DID: $c"; done; true`)
	if strings.Contains(res.Stdout, "DID") {
		t.Fatalf("a command changed .git: %+v", res)
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, ".git/HEAD")); string(raw) != "ref: refs/heads/main\n" {
		t.Fatalf(".git/HEAD is %q", raw)
	}
}

// TestSecretsAreClosedByWhatTheyAre: the default-deny list holds in dependency and
// build directories too, and for a hard link to a secret under another name.
func TestSecretsAreClosedByWhatTheyAre(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	var names []string
	for _, dir := range []string{"node_modules/pkg", "vendor/x", ".venv/lib", "dist", "target/debug", "__pycache__", "a/b/c/d"} {
		rel := filepath.Join(dir, ".env")
		os.MkdirAll(filepath.Join(s.Workspace, dir), 0o755)
		os.WriteFile(filepath.Join(s.Workspace, rel), []byte("TOKEN=sk-live-"+dir), 0o644)
		names = append(names, rel)
	}
	os.WriteFile(filepath.Join(s.Workspace, ".env"), []byte("TOKEN=sk-live-root"), 0o644)
	os.Link(filepath.Join(s.Workspace, ".env"), filepath.Join(s.Workspace, "notes.txt"))
	os.MkdirAll(filepath.Join(s.Workspace, "deps"), 0o755)
	os.Link(filepath.Join(s.Workspace, "node_modules/pkg/.env"), filepath.Join(s.Workspace, "deps/readme"))
	os.MkdirAll(filepath.Join(s.Workspace, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(s.Workspace, ".ssh", "config"), []byte("sk-live-ssh"), 0o600)
	os.Link(filepath.Join(s.Workspace, ".ssh", "config"), filepath.Join(s.Workspace, "deps", "ssh-notes"))
	res := run(t, s, "cat "+strings.Join(names, " ")+" notes.txt deps/readme deps/ssh-notes; mv .env moved; cat moved; true")
	if strings.Contains(res.Stdout, "sk-live") {
		t.Fatalf("a command read a secret: %+v", res)
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, ".env")); string(raw) != "TOKEN=sk-live-root" {
		t.Fatalf(".env on the host is now %q", raw)
	}
}

// TestWritesHaveAQuota: several files, each under the per-file cap, past the write
// quota: the writes fail inside the command, and nothing past the quota reaches the
// host's disk.
func TestWritesHaveAQuota(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.WriteBytes, s.FileBytes = 64<<20, 32<<20
	res := run(t, s, "for i in 1 2 3 4; do head -c 30000000 /dev/zero > f$i || echo FAILED $i; done; fallocate -l 100M big || echo FAILED big; true")
	if !strings.Contains(res.Stdout, "FAILED") || !strings.Contains(res.Stderr, "No space left on device") {
		t.Fatalf("no write failed past the quota: %+v", res)
	}
	if used := diskUsed(s.Workspace); used > int64(s.WriteBytes) {
		t.Fatalf("%d bytes reached the workspace under a %d byte quota", used, s.WriteBytes)
	}
	// Files that take little room in the write layer — hard links — cannot make the
	// host hold more than the quota either: counted again at apply time, each name
	// as a file, they fail the whole apply, and nothing lands.
	s2, _ := spec(t)
	s2.WriteBytes = 2 << 20
	res = run(t, s2, "head -c 1000000 /dev/urandom > a; for i in $(seq 1 20); do ln a l$i; done; echo ok > small")
	if used := diskUsed(s2.Workspace); used != 0 {
		t.Fatalf("%d bytes reached the host's disk from an apply past its %d byte quota: %+v", used, s2.WriteBytes, res.Changes)
	}
	if res.Changes == nil || !strings.Contains(res.Changes.Failed, "write quota") || res.ExitCode == 0 {
		t.Fatalf("the apply past the quota did not fail as a whole: %+v %+v", res, res.Changes)
	}
	// Sparse files are applied as they are, holes kept holes.
	s3, _ := spec(t)
	s3.WriteBytes = 2 << 20
	res = run(t, s3, "for i in 1 2 3 4 5; do truncate -s 8M sparse$i; done")
	if fi, err := os.Stat(filepath.Join(s3.Workspace, "sparse1")); err != nil || fi.Size() != 8<<20 {
		t.Fatalf("a sparse file within the quota was not applied as it was: %v %v %+v", fi, err, res.Changes)
	}
	if used := diskUsed(s3.Workspace); used > 1<<20 {
		t.Fatalf("sparse files took %d bytes on the host", used)
	}
}

// diskUsed is what the files below dir hold on disk (blocks, not sizes).
func diskUsed(dir string) int64 {
	var total int64
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			total += fi.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return nil
	})
	return total
}

// TestReadOnlyWorkspace: in read-only mode a command reads the workspace — files
// only the workspace's owner may read too — and changes nothing in it.
func TestReadOnlyWorkspace(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.WorkspaceReadOnly = true
	os.MkdirAll(filepath.Join(s.Workspace, "src"), 0o700)
	os.WriteFile(filepath.Join(s.Workspace, "src/main.go"), []byte("package main"), 0o600)
	res := run(t, s, "cat src/main.go; echo; echo x > new.txt || echo REFUSED; rm src/main.go || echo REFUSED; id -u")
	if !strings.HasPrefix(res.Stdout, "package main\nREFUSED\nREFUSED\n") || res.Changes != nil {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace, "src/main.go")); err != nil {
		t.Fatal(err)
	}
}

// TestTreeMemoryIsCapped: three processes of 700 MB each — every one within the
// per-process limit — cannot all hold their memory at once under a 1 GiB cap on the
// command's whole tree.
func TestTreeMemoryIsCapped(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.MemoryBytes, s.TreeMemoryBytes = 2<<30, 1<<30
	hold := `import os, sys, time
i = sys.argv[1]
b = bytearray(700 << 20)
for p in range(0, len(b), 4096): b[p] = 1
open("/tmp/held-" + i, "w").close()
print("held", i, flush=True)
for _ in range(60):
    if len([f for f in os.listdir("/tmp") if f.startswith("held-")]) == 3:
        print("all-held", flush=True); break
    time.sleep(0.05)
time.sleep(0.5)`
	os.WriteFile(filepath.Join(s.Workspace, "hold.py"), []byte(hold), 0o644)
	res := run(t, s, "for i in 1 2 3; do python3 hold.py $i & done; wait")
	if strings.Contains(res.Stdout, "all-held") {
		t.Fatalf("3 × 700 MB were held at once under a 1 GiB cap: %+v", res)
	}
	if !strings.Contains(res.Stdout, "held") {
		t.Fatalf("not even one process could hold its memory (the test means nothing): %+v", res)
	}
}

// TestMissingCgroupsFailClosed: a machine without the controllers runs no command.
func TestMissingCgroupsFailClosed(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.Unavailable = "cgroup"
	res, err := sandbox.Run(context.Background(), s, "echo ran > ran.txt")
	if err == nil || !strings.Contains(err.Error(), "no cgroup controllers") || res != nil {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(s.Workspace, "ran.txt")); err == nil {
		t.Fatal("the command ran without its cgroups")
	}
}

// TestMasksFollowTheWorkspace: what turnlog remembers of a workspace between commands
// never hides a secret that appeared since — in a directory already seen, in a new
// one, or as a new hard link.
func TestMasksFollowTheWorkspace(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	s.MaskCache = &sandbox.MaskCache{}
	dir := filepath.Join(s.Workspace, "node_modules", "pkg")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "index.js"), []byte("x"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dir, old, old) // settled: the cache trusts it unchanged while its mtime stands
	run(t, s, "true")
	os.WriteFile(filepath.Join(dir, ".env"), []byte("TOKEN=sk-live-new"), 0o644)
	os.MkdirAll(filepath.Join(s.Workspace, "fresh", "deep"), 0o755)
	os.WriteFile(filepath.Join(s.Workspace, "fresh", "deep", "id_rsa"), []byte("sk-live-key"), 0o600)
	os.Link(filepath.Join(dir, ".env"), filepath.Join(s.Workspace, "fresh", "notes"))
	res := run(t, s, "cat node_modules/pkg/.env fresh/deep/id_rsa fresh/notes; true")
	if strings.Contains(res.Stdout, "sk-live") {
		t.Fatalf("a secret that appeared after the first command was readable: %+v", res)
	}
	// A command that sets a directory's mtime back cannot blind the cache to what
	// appears in it later (the cache goes by ctime, which nobody sets).
	os.MkdirAll(filepath.Join(s.Workspace, "a"), 0o755)
	os.Chtimes(filepath.Join(s.Workspace, "a"), old, old)
	run(t, s, "true")
	run(t, s, `m=$(stat -c %.9Y a); mkdir a/hidden; touch -m -d "@$m" a`)
	os.WriteFile(filepath.Join(s.Workspace, "a", "hidden", ".env"), []byte("TOKEN=sk-live-later"), 0o600)
	if res := run(t, s, "cat a/hidden/.env; true"); strings.Contains(res.Stdout, "sk-live") {
		t.Fatalf("a command blinded the mask cache: %+v", res)
	}
}

// TestOddChangesAreRefusedOneByOne: a change the rules refuse (a fifo) is refused
// with its reason and the rest are applied — a path longer than the kernel takes in
// one piece too; a symlink named like a secret does not stop the next command.
func TestOddChangesAreRefusedOneByOne(t *testing.T) {
	t.Parallel()
	s, outside := spec(t)
	res := run(t, s, `n=$(printf "a%.0s" $(seq 1 250)); p=.; for i in $(seq 1 20); do p=$p/$n; done; mkdir -p $p; (for i in $(seq 1 20); do cd $n; done; echo data > f); mkfifo fifo; echo ok > zzz; ln -s /nonexistent .env; ln -s `+outside+`/secret.txt id_x`)
	if raw, err := os.ReadFile(filepath.Join(s.Workspace, "zzz")); err != nil || string(raw) != "ok\n" {
		t.Fatalf("an ordinary change was not applied after an odd one: %v %+v", err, res.Changes)
	}
	if res.Changes == nil || res.Changes.RefusedCount != 1 || res.Changes.Refused[0].Path != "fifo" {
		t.Fatalf("refused: %+v", res.Changes)
	}
	if out, err := exec.Command("bash", "-c", "cd "+s.Workspace+" && for i in $(seq 1 20); do cd a* || exit; done; cat f").CombinedOutput(); err != nil || string(out) != "data\n" {
		t.Fatalf("the deep file did not land: %v %s", err, out)
	}
	if res := run(t, s, "cat id_x; echo next"); !strings.HasSuffix(res.Stdout, "next\n") || strings.Contains(res.Stdout, "outside secret") {
		t.Fatalf("the next command: %+v", res)
	}
}

// TestRenamesAndLinksCrossDirectories: rename(2) and link(2) between directories
// of the workspace work inside (programs that do not fall back from EXDEV — package
// managers, build tools — rely on them) and land as they were made.
func TestRenamesAndLinksCrossDirectories(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	os.MkdirAll(filepath.Join(s.Workspace, "a"), 0o755)
	os.WriteFile(filepath.Join(s.Workspace, "a", "moved"), []byte("moved"), 0o644)
	res := run(t, s, `python3 -c '
import os
os.mkdir("b")
os.rename("a/moved", "b/moved")
with open("seed", "w") as f: f.write("seed")
os.link("seed", "b/linked")
os.mkdir("/tmp/t"); os.mkdir("/tmp/u")
with open("/tmp/t/x", "w") as f: f.write("x")
os.rename("/tmp/t/x", "/tmp/u/x")
'`)
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	for rel, want := range map[string]string{"b/moved": "moved", "b/linked": "seed", "seed": "seed"} {
		if raw, err := os.ReadFile(filepath.Join(s.Workspace, rel)); err != nil || string(raw) != want {
			t.Errorf("%s: %q %v", rel, raw, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(s.Workspace, "a", "moved")); err == nil {
		t.Error("a/moved is still there")
	}
}

// TestAppliedModesAreNeverMoreOpen: a command that makes its files world-writable
// and a directory sticky and world-writable leaves, on the host, nothing another
// local user may write, the sticky bit kept, and each lowered mode reported.
func TestAppliedModesAreNeverMoreOpen(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	os.Chmod(s.Workspace, 0o755)
	os.MkdirAll(filepath.Join(s.Workspace, "src"), 0o755)
	os.WriteFile(filepath.Join(s.Workspace, "src", "Makefile"), []byte("all:\n"), 0o644)
	res := run(t, s, "chmod 0777 src; chmod 0666 src/Makefile; mkdir -m 1777 pub; install -m 0666 /dev/null new.txt")
	for rel, want := range map[string]os.FileMode{"src": 0o755 | os.ModeDir, "src/Makefile": 0o644, "pub": 0o755 | os.ModeDir | os.ModeSticky, "new.txt": 0o644} {
		fi, err := os.Lstat(filepath.Join(s.Workspace, rel))
		if err != nil || fi.Mode()&(os.ModePerm|os.ModeDir|os.ModeSticky) != want {
			t.Errorf("%s: %v %v, want %v", rel, fi.Mode(), err, want)
		}
	}
	if res.Changes == nil || res.Changes.ModesCount != 4 {
		t.Fatalf("lowered modes reported: %+v", res.Changes)
	}
}

// TestARebuiltTreeKeepsNothingOfTheOld: a tree removed and made again (rm -rf d &&
// mkdir -p d/x) holds afterwards only what the command put in it, at every depth.
func TestARebuiltTreeKeepsNothingOfTheOld(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	os.MkdirAll(filepath.Join(s.Workspace, "d", "x", "y"), 0o755)
	for _, rel := range []string{"d/top", "d/x/stale", "d/x/y/deeper"} {
		os.WriteFile(filepath.Join(s.Workspace, rel), []byte("old"), 0o644)
	}
	run(t, s, "rm -rf d && mkdir -p d/x/y && echo new > d/x/new")
	for _, rel := range []string{"d/top", "d/x/stale", "d/x/y/deeper"} {
		if _, err := os.Lstat(filepath.Join(s.Workspace, rel)); err == nil {
			t.Errorf("%s came back", rel)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, "d/x/new")); string(raw) != "new\n" {
		t.Fatalf("d/x/new: %q", raw)
	}
}
