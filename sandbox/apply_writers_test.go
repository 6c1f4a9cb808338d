package sandbox_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

// Every writer of a workspace takes its lock and checks the state it will leave:
// two commands ending together, or a command and a file tool, cannot build what
// neither may build alone.

// plantedRepository writes, split in two halves, a repository whose config runs a
// command when someone runs git there: marker is where that command leaves its mark.
func plantedRepository(marker string) (half1, half2 string) {
	half1 = `mkdir -p x/refs/heads && echo "ref: refs/heads/main" > x/HEAD && printf '[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = "touch ` + marker + `"\n' > x/config`
	half2 = `mkdir -p x/objects/info x/objects/pack && touch x/objects/info/packs`
	return
}

// hostGitStatus runs git status in dir as the host would (root, outside any
// sandbox), and says whether the planted command ran.
func hostGitStatus(t *testing.T, dir, marker string) bool {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "status")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(filepath.Dir(dir))}
	cmd.Run()
	_, err := os.Stat(marker)
	return err == nil
}

// TestTwoAppliesCannotBuildARepository: one command brings HEAD, config and refs,
// another objects; they end together, 20 times. Neither apply may complete a
// repository the other began: a host git status never runs the planted config.
func TestTwoAppliesCannotBuildARepository(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	for try := range 20 {
		s, outside := spec(t)
		marker := filepath.Join(outside, "planted-ran")
		half1, half2 := plantedRepository(marker)
		var wg sync.WaitGroup
		results := make([]*sandbox.Result, 2)
		for i, c := range []string{half1, half2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := sandbox.Run(context.Background(), s, "sleep 0.2; "+c)
				if err != nil {
					t.Error(err)
					return
				}
				results[i] = res
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if hostGitStatus(t, filepath.Join(s.Workspace, "x"), marker) {
			t.Fatalf("try %d: git on the host ran the config two commands planted together: %+v %+v", try, results[0].Changes, results[1].Changes)
		}
		refused := 0
		for _, r := range results {
			if r.Changes != nil {
				refused += r.Changes.RefusedCount
			}
		}
		if refused == 0 {
			t.Fatalf("try %d: nothing was refused, yet no repository stands: %+v %+v", try, results[0].Changes, results[1].Changes)
		}
	}
}

// writeFile writes as the file tools do: the path checked, under the lock, the
// repository test on what the write leaves.
func writeFile(ws *sandbox.Workspace, p, content string) error {
	rel, err := ws.WritableRel(p)
	if err != nil {
		return err
	}
	unlock, err := ws.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := ws.CheckWrite(rel); err != nil {
		return err
	}
	if err := ws.MkdirAll(filepath.Dir(rel)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(ws.Dir(), rel), []byte(content), 0o644)
}

// TestARepositoryCannotBeSplitAcrossACommandAndAFileTool: the planted repository's
// halves from a command and from a file tool, in both orders — the tool's write
// before the command's apply (while it runs), and after — never stand together.
func TestARepositoryCannotBeSplitAcrossACommandAndAFileTool(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"tool while the command runs", "tool after the command"} {
		s, outside := spec(t)
		marker := filepath.Join(outside, "planted-ran")
		half1, _ := plantedRepository(marker)
		ws, err := sandbox.OpenWorkspace(s.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		var toolErr error
		var res *sandbox.Result
		if order == "tool while the command runs" {
			started := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				res, err = sandbox.Run(context.Background(), sandbox.WithStarted(s, func(int) { close(started) }), "sleep 0.5; "+half1)
			}()
			<-started
			toolErr = writeFile(ws, "x/objects/info/packs", "")
			<-done
		} else {
			res, err = sandbox.Run(context.Background(), s, half1)
			toolErr = writeFile(ws, "x/objects/info/packs", "")
		}
		ws.Close()
		if err != nil {
			t.Fatal(err)
		}
		if hostGitStatus(t, filepath.Join(s.Workspace, "x"), marker) {
			t.Fatalf("%s: git on the host ran the planted config: %+v, tool: %v", order, res.Changes, toolErr)
		}
		if toolErr == nil && (res.Changes == nil || res.Changes.RefusedCount == 0) {
			t.Fatalf("%s: neither the tool nor the apply refused anything: %+v", order, res.Changes)
		}
	}
}

// TestAChangeMadeWhileACommandRanIsNeverOverwritten: a file the host (or a tool)
// changed after the command started, that the command changed too, keeps the
// host's content, and the refusal says why; a file changed just before the command
// started is the command's to change.
func TestAChangeMadeWhileACommandRanIsNeverOverwritten(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	f := filepath.Join(s.Workspace, "f")
	os.WriteFile(f, []byte("before\n"), 0o644)
	started := make(chan struct{})
	var res *sandbox.Result
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = sandbox.Run(context.Background(), sandbox.WithStarted(s, func(int) { close(started) }), "sleep 0.3; echo command >> f; echo other > g")
	}()
	<-started
	os.WriteFile(f, []byte("host\n"), 0o644)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := os.ReadFile(f); string(raw) != "host\n" {
		t.Fatalf("f is %q: the host's change was overwritten (%+v)", raw, res.Changes)
	}
	if raw, _ := os.ReadFile(filepath.Join(s.Workspace, "g")); string(raw) != "other\n" {
		t.Fatalf("the command's other change did not land: %q", raw)
	}
	if c := res.Changes; c == nil || c.RefusedCount != 1 || c.Refused[0].Path != "f" || !strings.Contains(c.Refused[0].Reason, "since the command started") {
		t.Fatalf("refusals: %+v", c)
	}
	// Written, then at once changed by a command: the command's change lands.
	os.WriteFile(f, []byte("tool\n"), 0o644)
	res = run(t, s, "echo command >> f")
	if raw, _ := os.ReadFile(f); string(raw) != "tool\ncommand\n" {
		t.Fatalf("a change made just before the command started was taken for one made while it ran: %q %+v", raw, res.Changes)
	}
}

// TestWritersOfOtherProcessesAreWaitedFor: while another process holds the
// workspace's lock (turnlog run beside serve, here flock(1)), a command's apply
// waits for it: what the command wrote is not there while the lock is held, and is
// after.
func TestWritersOfOtherProcessesAreWaitedFor(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Fatal("flock (util-linux) is needed")
	}
	spec, _ := spec(t)
	dir := spec.Workspace
	holder := exec.Command("flock", "-x", dir, "-c", "echo locked; read _; test -e "+filepath.Join(dir, "made")+" && echo present || echo absent")
	in, _ := holder.StdinPipe()
	out, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	if line, _ := br.ReadString('\n'); line != "locked\n" {
		t.Fatalf("the holder said %q", line)
	}
	done := make(chan *sandbox.Result, 1)
	go func() {
		res, err := sandbox.Run(context.Background(), sandbox.WithEnded(spec, func() {
			in.Write([]byte("\n")) // the command has ended: its apply now waits for the lock
		}), "echo x > made")
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	verdict, _ := br.ReadString('\n')
	in.Close()
	holder.Wait()
	res := <-done
	if strings.TrimSpace(verdict) != "absent" {
		t.Fatalf("the apply wrote while another process held the workspace's lock: %q", verdict)
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "made")); err != nil || string(raw) != "x\n" {
		t.Fatalf("the apply did not land once the lock was let go: %v %+v", err, res)
	}
}
