package systemtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ownCgroupDirs are the directories of the memory and pids cgroups this process
// runs in, wherever they are mounted (v1), or of its v2 group.
func ownCgroupDirs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			for _, c := range strings.Split(parts[1], ",") {
				own[c] = parts[2]
			}
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fl := range fields {
			if fl != "-" || i+3 >= len(fields) || fields[i+1] != "cgroup" {
				continue
			}
			for _, o := range strings.Split(fields[i+3], ",") {
				if o == "memory" || o == "pids" {
					dirs = append(dirs, filepath.Join(fields[4], own[o]))
				}
			}
		}
	}
	if len(dirs) == 0 {
		t.Skip("no cgroup v1 memory and pids hierarchies here")
	}
	return dirs
}

// TestRunLeavesNoCgroups: five runs of turnlog run, each running commands in the
// sandbox, leave no cgroup behind. The runs start in groups of the test's own,
// below its own, so that what other tests make is not counted.
func TestRunLeavesNoCgroups(t *testing.T) {
	t.Parallel()
	bin := turnlogBinary(t)
	var groups, procs []string
	for _, d := range ownCgroupDirs(t) {
		g := filepath.Join(d, fmt.Sprintf("turnlog-test-%d", os.Getpid()))
		if err := os.Mkdir(g, 0o755); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(g) })
		groups, procs = append(groups, g), append(procs, filepath.Join(g, "cgroup.procs"))
	}
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "build"), 0o755)
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte(taskConfig), 0o644)
	for i := range 5 {
		os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("TODO\n"), 0o644)
		join := ""
		for _, p := range procs {
			join += "echo $$ > " + p + " && "
		}
		cmd := exec.Command("sh", "-c", join+`exec "$@"`, "sh", bin, "run", "--config", cfg, "--app", "coder", "--db", filepath.Join(dir, "t.db"), "--workspace", ws, "fix notes.txt")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out)
		}
	}
	for _, g := range groups {
		entries, _ := os.ReadDir(g)
		for _, e := range entries {
			if e.IsDir() {
				t.Errorf("turnlog run left the cgroup %s", filepath.Join(g, e.Name()))
			}
		}
	}
}
