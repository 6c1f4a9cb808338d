package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Mechanisms that confine a command's filesystem.
const (
	// MechanismLandlock (the default): the command's own root (built by the helper),
	// restricted further with Landlock.
	MechanismLandlock = "landlock"
	// MechanismBubblewrap: the same root, in which an unprivileged bwrap (bubblewrap)
	// makes the command's namespaces and loads its seccomp filter, for kernels
	// without Landlock. It cannot close the host's abstract unix sockets to a command
	// that has the host's network.
	MechanismBubblewrap = "bubblewrap"
)

// Mechanisms lists the mechanisms.
var Mechanisms = []string{MechanismLandlock, MechanismBubblewrap}

// checkMechanism refuses a mechanism the machine lacks, or an unknown one, before
// anything starts: the program never runs without it.
func checkMechanism(spec Spec) error {
	switch spec.Mechanism {
	case "", MechanismLandlock:
		return nil
	case MechanismBubblewrap:
	default:
		return &Error{Msg: fmt.Sprintf("unknown sandbox mechanism %q (%s or %s)", spec.Mechanism, MechanismLandlock, MechanismBubblewrap)}
	}
	if _, err := exec.LookPath("bwrap"); err != nil || spec.Unavailable == MechanismBubblewrap {
		return &Error{Msg: "bubblewrap is configured, and bwrap is not installed here (apt-get install bubblewrap)"}
	}
	return nil
}

// bubblewrapArgv is argv run by bwrap, as the helper starts the command (as
// CommandUID, inside the root the helper built): bwrap makes a user namespace
// (an unprivileged bwrap must), PID, IPC and UTS namespaces — a PID namespace of its
// own too, without which its /proc would not be its own — binds the system
// directories read-only, the helper's /tmp and /dev/shm, and the workspace as the
// helper shows it (masks included),
// drops every capability and loads the seccomp program read from seccompFD.
func bubblewrapArgv(spec Spec, argv []string, seccompFD int) ([]string, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, err
	}
	args := []string{bwrap, "--die-with-parent", "--new-session", "--unshare-user", "--uid", fmt.Sprint(CommandUID), "--gid", fmt.Sprint(CommandUID),
		"--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		// The helper's own /tmp and /dev/shm, bounded in bytes and in entries (bwrap's
		// own tmpfs takes a size alone, and its /dev/shm none).
		"--dev", "/dev", "--proc", "/proc", "--bind", "/tmp", "/tmp", "--bind", "/dev/shm", "/dev/shm"}
	for _, d := range spec.ReadOnly {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, err
			}
			args = append(args, "--symlink", target, d)
		default:
			args = append(args, "--ro-bind", d, d)
		}
	}
	bind := "--bind"
	if spec.WorkspaceReadOnly {
		bind = "--ro-bind"
	}
	args = append(args, bind, spec.Workspace, spec.Workspace)
	for _, d := range spec.ownDirs() {
		args = append(args, "--bind", d, d)
	}
	args = append(args, "--ro-bind", gitConfigFile, gitConfigFile)
	for _, kv := range commandExtraEnv(spec) { // for the command alone, inside bwrap
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--chdir", spec.Workspace, "--seccomp", fmt.Sprint(seccompFD), "--")
	return append(args, argv...), nil
}
