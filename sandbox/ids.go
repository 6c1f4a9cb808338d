package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// CommandUID is the host uid and gid every sandboxed process runs as: an id no
// account holds, so a command is never root on the host, owns nothing there, and
// reaches nothing that is not world-readable. The workspace is shown to it through
// an id-mapped mount on which the ids 0–65535 of its files appear as CommandUID and
// the 65,535 ids above it, so that a command owns the workspace's root-owned files
// (and may change them) while nothing it writes lands on the host: its writes go to
// an overlay upper layer that turnlog applies to the workspace afterwards (see
// changes.go), with turnlog's own ownership and without setuid bits or capabilities.
const (
	CommandUID = 1_000_000_000
	mappedIDs  = 65536
)

// sharedIDMap is the id-mapping user namespace turnlog hands every helper: made once
// per process (it never changes), so no command waits for a process to make one.
var sharedIDMap = sync.OnceValues(func() (*os.File, error) {
	fd, err := idmapUserNamespace()
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "idmap-userns"), nil
})

// idmapUserNamespace is a user namespace that maps the ids 0–65535 to CommandUID
// onwards: the mapping an id-mapped mount of the workspace is given. A process is
// needed to hold one while it is set up (a multi-threaded Go process cannot unshare
// a user namespace itself); it is ended as soon as the namespace is open.
func idmapUserNamespace() (int, error) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		return -1, fmt.Errorf("a process to hold the id mapping: %w", err)
	}
	holder := exec.Command(cat)
	stdin, err := holder.StdinPipe()
	if err != nil {
		return -1, err
	}
	ids := []syscall.SysProcIDMap{{ContainerID: 0, HostID: CommandUID, Size: mappedIDs}}
	holder.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, UidMappings: ids, GidMappings: ids, Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		return -1, fmt.Errorf("a user namespace for the id mapping: %w", err)
	}
	defer func() {
		stdin.Close()
		holder.Wait()
	}()
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", holder.Process.Pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the id mapping's namespace: %w", err)
	}
	return fd, nil
}

// idmappedClone attaches at target (a directory) a copy of the mount tree at source through which
// source's files appear owned by CommandUID (see CommandUID), read-only if ro.
func idmappedClone(source, target string, usernsFD int, ro bool) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone the mount of %s: %w", source, err)
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Userns_fd: uint64(usernsFD)}
	if ro {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return fmt.Errorf("id-map the mount of %s (its file system must support id-mapped mounts): %w", source, err)
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach the id-mapped %s: %w", source, err)
	}
	return nil
}
