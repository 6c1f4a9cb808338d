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

// layerOwnEntries are the entries of the write layer's tmpfs that are not the
// command's: its root, the lower, upper and work directories and overlayfs's own.
const layerOwnEntries = 8

// layers is what the helper keeps of a workspace it showed a command through an
// overlay: the upper layer (what the command wrote) and, handed down by turnlog,
// the real workspace and the command's staging directory (see staging.go), as open
// directories — after pivot_root none has a path any more. turnlog opened the last
// two in its own mount namespace, where a rename from one to the other is not across
// mounts.
type layers struct {
	upper     *os.File
	workspace *os.File
	staging   *os.File
	stagingID string
	afterOp   func(done, all int) // a test's pause, after so many steps of the apply
}

// mountWorkspace shows the workspace at target: through an id-mapped mount (its
// files owned by CommandUID), read-only, or — writable — as an overlay whose lower
// layer is that mount and whose upper layer is a tmpfs of writeBytes: a command's
// writes land there, never on the host, and fail with ENOSPC past the quota — of
// bytes, and of entries (what the layer stores: files, directories, symlinks, the
// overlay's whiteouts and copied-up directories). The returned layers are nil for a
// read-only workspace.
//
// userns is the id-mapping user namespace (sharedIDMap, handed down by turnlog).
func mountWorkspace(workspace, target string, readOnly bool, writeBytes, writeEntries uint64, userns int) (*layers, error) {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return nil, err
	}
	if readOnly {
		return nil, idmappedClone(workspace, target, userns, true)
	}
	if err := os.MkdirAll(scratchBase, 0o700); err != nil {
		return nil, err
	}
	// The layer's own directories take a few entries of their own.
	opts := fmt.Sprintf("mode=0700,size=%d,nr_inodes=%d", writeBytes, writeEntries+layerOwnEntries)
	if err := syscall.Mount("tmpfs", scratchBase, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("the command's write layer: %w", err)
	}
	lower, upper, work := scratchBase+"/lower", scratchBase+"/upper", scratchBase+"/work"
	for _, d := range []string{lower, upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	// The upper layer's root takes the place of the workspace's own directory: it is
	// the command's, as the workspace seen through the id mapping is.
	if err := os.Chown(upper, CommandUID, CommandUID); err != nil {
		return nil, err
	}
	if err := idmappedClone(workspace, lower, userns, true); err != nil {
		return nil, err
	}
	// redirect_dir off: renaming a directory of the lower layer copies it (the command
	// sees EXDEV first, which mv and the like handle), so the upper layer says every
	// change by path. metacopy off: a changed file is copied whole.
	ovl := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,redirect_dir=off,metacopy=off,index=off,xino=off,uuid=off", lower, upper, work)
	if err := syscall.Mount("overlay", target, "overlay", syscall.MS_NOSUID|syscall.MS_NODEV, ovl); err != nil {
		return nil, fmt.Errorf("the workspace overlay: %w", err)
	}
	up, err := os.Open(upper)
	if err != nil {
		return nil, err
	}
	return &layers{upper: up}, nil
}
