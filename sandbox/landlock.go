package sandbox

import (
	"fmt"
	"os"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

const prSetNoNewPrivs = 38 // PR_SET_NO_NEW_PRIVS

// restrictWithLandlock restricts the calling thread: the workspace, /tmp and the
// system directories only, TCP only to the proxy (or not at all) without the host's
// network, abstract sockets and signals scoped. It says why it could not, or "".
func restrictWithLandlock(spec Spec) string {
	if spec.Unavailable == "landlock" {
		return "landlock is not available here, and this sandbox requires it"
	}
	// Renames and hard links between directories (Landlock's "refer") are granted
	// within the writable trees: without it they fail with EXDEV, which os.rename
	// and link(2) callers (package managers, build tools) do not fall back from.
	ws := landlock.RWDirs(spec.Workspace).WithRefer()
	if spec.WorkspaceReadOnly {
		ws = landlock.RODirs(spec.Workspace)
	}
	rules := []landlock.Rule{ws, landlock.RWDirs("/tmp").WithRefer(), landlock.RWFiles("/dev/null"), landlock.ROFiles("/dev/urandom", "/dev/zero")}
	for _, d := range spec.ownDirs() {
		rules = append(rules, landlock.RWDirs(d).WithRefer())
	}
	rules = append(rules, landlock.ROFiles(gitConfigFile))
	for _, d := range spec.ReadOnly {
		if _, err := os.Stat(d); err == nil {
			rules = append(rules, landlock.RODirs(d))
		}
	}
	// ABI 5 exactly, not best effort: a kernel without it fails the call closed. With
	// no network, TCP is closed by Landlock too (the namespace has no route out anyway).
	cfg := landlock.Config{HandledAccessFS: landlock.V5.HandledAccessFS}
	// ABI 6 scopes abstract unix sockets and signals to the command's own domain.
	// With the host's network (workspace-write) that is the only thing between the
	// command and the host's abstract sockets, so there it is required.
	switch abi, _ := llsyscall.LandlockGetABIVersion(); {
	case abi >= 6:
		cfg.Scoped = landlock.V6.Scoped
	case spec.Network:
		return fmt.Sprintf("this kernel's Landlock (ABI %d) cannot keep a command with the host's network from the host's abstract unix sockets (ABI 6, Linux 6.12); use a network-off mode", abi)
	}
	if !spec.Network {
		cfg.HandledAccessNet = landlock.V5.HandledAccessNet
		if spec.ProxyPort != 0 {
			rules = append(rules, landlock.ConnectTCP(uint16(spec.ProxyPort)))
		}
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return "landlock: " + err.Error()
	}
	defer syscall.Close(fd)
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return "landlock: " + err.Error()
	}
	return ""
}
