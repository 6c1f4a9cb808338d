package sandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
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
	MechNoNetwork    = "pid+net namespaces (network off)"
	MechProxy        = "network proxy namespace (network-allowlist)"
	MechProcessLimit = "process limit (per-namespace pid_max)"
	MechBubblewrap   = "bubblewrap (policy sandbox: bubblewrap)"
	MechUnprivileged = "unprivileged uid, id-mapped overlay (writes applied afterwards)"
	MechSeccomp      = "seccomp filter (a small kernel surface)"
	MechHostNetwork  = "host network (policy network: host)"
	MechCgroup       = "cgroups (memory and processes of the whole tree)"
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
			{MechHostNetwork, Spec{Workspace: dir, Network: true}},
			{MechBubblewrap, Spec{Workspace: dir, Mechanism: MechanismBubblewrap}},
		} {
			c.spec.Timeout = 10 * time.Second
			res, err := Run(ctx, c.spec, "true")
			out = append(out, Check{c.name, err == nil && res.ExitCode == 0, errText(err)})
		}
		res, err := Run(ctx, Spec{Workspace: dir, Timeout: 10 * time.Second}, "id -u && echo probe > probe")
		raw, _ := os.ReadFile(dir + "/probe")
		works := err == nil && res.ExitCode == 0 && strings.TrimSpace(res.Stdout) == fmt.Sprint(CommandUID) && string(raw) == "probe\n"
		detail := fmt.Sprintf("commands run as uid %d; what they write is applied to the workspace after they end", CommandUID)
		if !works {
			detail = errText(err)
		}
		out = append(out, Check{MechUnprivileged, works, detail})
	}
	if commandFilter() != nil {
		out = append(out, Check{MechSeccomp, true, fmt.Sprintf("%s: the keyrings, bpf, io_uring, mounts, vsock … refused; unknown calls ENOSYS", runtime.GOARCH)})
	} else {
		out = append(out, Check{MechSeccomp, false, "no filter for " + runtime.GOARCH})
	}
	if t, err := newCgroupTree("", DefaultTreeMemory, DefaultProcesses); err != nil {
		out = append(out, Check{MechCgroup, false, err.Error()})
	} else {
		out = append(out, Check{MechCgroup, true, t.Version + ", in a group below turnlog's own"})
		t.remove()
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
