package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// scratchBase is where, in its own mount namespace, a helper mounts the tmpfs that
// holds a command's writes (the overlay's upper layer) and the id-mapped workspace
// under it (its lower layer). Like rootBase it is an empty directory on the host.
const scratchBase = "/run/turnlog-sandbox-scratch"

// layers is what the helper keeps of a workspace it showed a command through an
// overlay: the upper layer (what the command wrote) and the real workspace, as open
// directories — after pivot_root neither has a path any more.
type layers struct {
	upper     *os.File
	workspace *os.File
}

// mountWorkspace shows the workspace at target: through an id-mapped mount (its
// files owned by CommandUID), read-only, or — writable — as an overlay whose lower
// layer is that mount and whose upper layer is a tmpfs of writeBytes: a command's
// writes land there, never on the host, and fail with ENOSPC past the quota. The
// returned layers are nil for a read-only workspace.
//
// userns is the id-mapping user namespace (sharedIDMap, handed down by turnlog).
func mountWorkspace(workspace, target string, readOnly bool, writeBytes uint64, userns int) (*layers, error) {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return nil, err
	}
	if readOnly {
		return nil, idmappedClone(workspace, target, userns, true)
	}
	real, err := os.Open(workspace)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(scratchBase, 0o700); err != nil {
		real.Close()
		return nil, err
	}
	opts := fmt.Sprintf("mode=0700,size=%d", writeBytes)
	if err := syscall.Mount("tmpfs", scratchBase, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		real.Close()
		return nil, fmt.Errorf("the command's write layer: %w", err)
	}
	lower, upper, work := scratchBase+"/lower", scratchBase+"/upper", scratchBase+"/work"
	for _, d := range []string{lower, upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			real.Close()
			return nil, err
		}
	}
	// The upper layer's root takes the place of the workspace's own directory: it is
	// the command's, as the workspace seen through the id mapping is.
	if err := os.Chown(upper, CommandUID, CommandUID); err != nil {
		real.Close()
		return nil, err
	}
	if err := idmappedClone(workspace, lower, userns, true); err != nil {
		real.Close()
		return nil, err
	}
	// redirect_dir off: renaming a directory of the lower layer copies it (the command
	// sees EXDEV first, which mv and the like handle), so the upper layer says every
	// change by path. metacopy off: a changed file is copied whole.
	ovl := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,metacopy=off,index=off,xino=off,uuid=off", lower, upper, work)
	if err := syscall.Mount("overlay", target, "overlay", syscall.MS_NOSUID|syscall.MS_NODEV, ovl); err != nil {
		real.Close()
		return nil, fmt.Errorf("the workspace overlay: %w", err)
	}
	up, err := os.Open(upper)
	if err != nil {
		real.Close()
		return nil, err
	}
	return &layers{upper: up, workspace: real}, nil
}
