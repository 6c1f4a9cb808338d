package sandbox

import (
	"fmt"
	"os"
	"os/exec"
)

// Mechanisms that confine a command's filesystem.
const (
	// MechanismLandlock (the default): the helper builds the command's root, restricts
	// it with Landlock and drops its capabilities.
	MechanismLandlock = "landlock"
	// MechanismBubblewrap: bwrap (bubblewrap) builds the root and drops the
	// capabilities, for kernels without Landlock. It cannot close the host's abstract
	// unix sockets to a command that has the host's network.
	MechanismBubblewrap = "bubblewrap"
)

// Mechanisms lists the mechanisms.
var Mechanisms = []string{MechanismLandlock, MechanismBubblewrap}

// wrap is the argv the helper execs after its own steps: the program itself, or, with
// bubblewrap, bwrap building the program's root first. A configured mechanism the
// machine lacks is an error: the program never runs without it.
func wrap(spec Spec, argv []string) ([]string, error) {
	switch spec.Mechanism {
	case "", MechanismLandlock:
		return argv, nil
	case MechanismBubblewrap:
	default:
		return nil, &Error{Msg: fmt.Sprintf("unknown sandbox mechanism %q (%s or %s)", spec.Mechanism, MechanismLandlock, MechanismBubblewrap)}
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil || spec.Unavailable == MechanismBubblewrap {
		return nil, &Error{Msg: "bubblewrap is configured, and bwrap is not installed here (apt-get install bubblewrap)"}
	}
	// The helper has made the PID, mount and (unless the network is allowed) network
	// namespaces already; bwrap adds the rest inside them — a PID namespace of its own
	// too, without which its /proc would be the host's.
	args := []string{bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--dev", "/dev", "--proc", "/proc", "--size", fmt.Sprint(TmpBytes), "--tmpfs", "/tmp"}
	for _, d := range spec.ReadOnly {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, &Error{Msg: err.Error()}
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
	args = append(args, bind, spec.Workspace, spec.Workspace, "--chdir", spec.Workspace, "--")
	return append(args, argv...), nil
}
