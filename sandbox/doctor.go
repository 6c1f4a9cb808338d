package sandbox

import (
	"context"
	"fmt"
	"os"
	"time"

	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Check is one mechanism the sandbox uses, and whether it works on this machine.
type Check struct {
	Mechanism string
	Works     bool
	Detail    string
}

// The mechanisms Doctor checks.
const (
	MechLandlock     = "landlock"
	MechNoNetwork    = "pid+net namespaces (network-off modes)"
	MechProxy        = "network proxy namespace (network-allowlist)"
	MechPIDNamespace = "pid namespace (workspace-write)"
	MechProcessLimit = "process limit (per-namespace pid_max)"
	MechBubblewrap   = "bubblewrap (policy sandbox: bubblewrap)"
)

// Doctor probes every mechanism for real (a sandboxed `true` in a scratch workspace
// exercises the namespaces, Landlock and the limits together).
func Doctor(ctx context.Context) []Check {
	var out []Check
	abi, err := llsyscall.LandlockGetABIVersion()
	out = append(out, Check{MechLandlock, err == nil && abi >= 5, fmt.Sprintf("kernel ABI %d (the sandbox needs 5; 6 with the host network)%s", abi, errText(err))})
	dir, err := os.MkdirTemp("", "turnlog-doctor-")
	if err == nil {
		defer os.RemoveAll(dir)
		refuseAll := func(context.Context, string) error { return fmt.Errorf("doctor") }
		for _, c := range []struct {
			name string
			spec Spec
		}{
			{MechNoNetwork, Spec{Workspace: dir}},
			{MechProxy, Spec{Workspace: dir, AllowHost: refuseAll}},
			{MechPIDNamespace, Spec{Workspace: dir, Network: true}},
			{MechBubblewrap, Spec{Workspace: dir, Mechanism: MechanismBubblewrap}},
		} {
			c.spec.Timeout = 10 * time.Second
			res, err := Run(ctx, c.spec, "true")
			out = append(out, Check{c.name, err == nil && res.ExitCode == 0, errText(err)})
		}
	}
	ok, why := pidMaxPerNamespace()
	out = append(out, Check{MechProcessLimit, ok, why})
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
