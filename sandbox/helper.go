package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

// The helper's stages, as helperEnv names them.
const (
	stageSetUp   = "1" // root: namespaces, the root, the workspace's layers; waits, applies
	stageConfine = "2" // CommandUID: restricts itself and becomes the command
	// reportEnv names the descriptor on which the first stage reports the changes it
	// applied (a JSON Changes) before it exits.
	reportEnv = "TURNLOG_SANDBOX_REPORT"
)

// IsHelper says whether this process is one of the sandbox's helper stages (turnlog
// started itself to set a command up from inside its namespaces). main calls
// HelperMain then.
func IsHelper() bool { return os.Getenv(helperEnv) != "" }

// BecomeHelperIfAsked runs HelperMain (which never returns) when this process was
// started as the helper; a binary that runs sandboxed commands — turnlog, or a test
// binary — calls it first thing.
func BecomeHelperIfAsked() {
	if IsHelper() {
		HelperMain()
	}
}

// HelperMain is the sandbox's helper; it never returns. Its first stage runs as root
// in the command's new PID and mount namespaces: it sets the process limit, builds the
// command's root (the workspace shown through an id-mapped overlay, secrets masked,
// .git read-only) and starts the second stage as CommandUID, which confines itself
// and becomes the command (confineMain). The first stage stays the namespace's first
// process — out of the command's reach, since it is root and not dumpable — reaps
// what the command leaves, and when the command ends (or turnlog asks with SIGTERM)
// kills every process left, applies what the command wrote to the workspace and
// reports it. Any step that fails ends the process with status 125 and the reason,
// so the command never runs unconfined.
func HelperMain() {
	var spec Spec
	if err := json.Unmarshal([]byte(os.Getenv(specEnv)), &spec); err != nil {
		fail("unreadable spec: %v", err)
	}
	if os.Getenv(helperEnv) == stageConfine {
		confineMain(spec)
	}
	var report *os.File
	if v := os.Getenv(reportEnv); v != "" {
		fd, err := strconv.Atoi(v)
		if err != nil {
			fail("unreadable report descriptor %q", v)
		}
		syscall.CloseOnExec(fd)
		report = os.NewFile(uintptr(fd), "report")
	}
	os.Unsetenv(reportEnv)
	if err := joinCgroups(spec.CgroupProcs); err != nil {
		fail("cannot join the command's cgroups: %v", err)
	}
	if spec.Unavailable == "pid_max" {
		fail("no per-namespace process limit here, and this sandbox requires one")
	}
	if err := limitProcesses(spec.MaxProcesses); err != nil {
		fail("cannot limit the number of processes: %v", err)
	}
	lay, err := enterPrivateRoot(spec.Workspace, spec.WorkspaceReadOnly, spec.ReadOnly, spec.WriteBytes)
	if err != nil {
		fail("cannot set the command's filesystem up: %v", err)
	}
	scan := spec.Workspace // read-only: the view is the workspace itself
	if lay != nil {
		scan = fmt.Sprintf("/proc/self/fd/%d", lay.workspace.Fd())
	}
	if err := maskDenied(spec.Workspace, scan); err != nil {
		fail("cannot hide the workspace's denied files: %v", err)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		fail("not dumpable: %v", errno)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	pid, err := startConfined()
	if err != nil {
		fail("cannot start the command: %v", err)
	}
	go func() {
		<-stop
		syscall.Kill(-1, syscall.SIGKILL) // every process of the namespace but this one
	}()
	code := reapUntil(pid)
	syscall.Kill(-1, syscall.SIGKILL)
	reapUntil(-1)
	if lay != nil {
		changes, err := applyChanges(lay)
		if err != nil {
			fmt.Fprintf(os.Stderr, "turnlog: applying the command's changes to the workspace failed: %v\n", err)
			if code == 0 {
				code = helperFail
			}
		}
		if report != nil {
			json.NewEncoder(report).Encode(changes)
		}
	}
	os.Exit(code)
}

// startConfined starts the helper's second stage: this binary again, as CommandUID
// with no supplementary groups (so no capability either), in the workspace, with the
// command's standard streams and nothing else of this process's descriptors.
func startConfined() (int, error) {
	os.Setenv(helperEnv, stageConfine)
	env := os.Environ()
	dir, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	return syscall.ForkExec("/proc/self/exe", os.Args, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: CommandUID, Gid: CommandUID, Groups: []uint32{}},
			Pdeathsig:  syscall.SIGKILL,
		},
	})
}

// reapUntil reaps the namespace's processes (orphans come to its first process) until
// pid has exited, and says with what status a shell would; with pid -1 until none is
// left.
func reapUntil(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return helperFail
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
