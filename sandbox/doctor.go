package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Check is one mechanism the sandbox uses, and whether it works on this machine.
type Check struct {
	Mechanism string
	Works     bool
	Detail    string
}

// Doctor probes every mechanism for real (a sandboxed `true` in a scratch workspace
// exercises the namespaces, Landlock and the limits together).
func Doctor(ctx context.Context) []Check {
	var out []Check
	abi, err := llsyscall.LandlockGetABIVersion()
	out = append(out, Check{"landlock", err == nil && abi >= 5, fmt.Sprintf("kernel ABI %d (the sandbox needs 5)%s", abi, errText(err))})
	dir, err := os.MkdirTemp("", "turnlog-doctor-")
	if err == nil {
		defer os.RemoveAll(dir)
		for _, network := range []bool{false, true} {
			name := "pid+net namespaces (network-off modes)"
			if network {
				name = "pid namespace (workspace-write)"
			}
			res, err := Run(ctx, Spec{Workspace: dir, Network: network, Timeout: 10 * time.Second}, "true")
			out = append(out, Check{name, err == nil && res.ExitCode == 0, errText(err)})
		}
	}
	_, err = exec.LookPath("bwrap")
	out = append(out, Check{"bubblewrap", err == nil, "optional; not used yet" + errText(err)})
	ok, why := pidMaxPerNamespace()
	out = append(out, Check{"process limit (per-namespace pid_max)", ok, why})
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
