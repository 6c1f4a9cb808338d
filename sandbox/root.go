package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// rootBase is where, in its own mount namespace, a helper builds the root its command
// sees (an empty directory on the host; every mount on it is private to a sandbox).
const rootBase = "/run/turnlog-sandbox"

// In the command's root: the empty file bound over masked files; the git
// configuration turnlog gives commands as their user's (GIT_CONFIG_GLOBAL); the
// HOME of a command given none.
const (
	emptyFile     = "/.turnlog-empty"
	gitConfigFile = "/.turnlog-gitconfig"
	tmpHome       = "/tmp/home"
)

// gitConfig is what git reads as the user's configuration in the sandbox: any
// repository of the workspace may be used (its files appear as the command's own
// anyway), commits have an author, and nothing of it runs a program.
const gitConfig = `[safe]
	directory = *
[user]
	name = turnlog
	email = turnlog@localhost
[init]
	defaultBranch = main
[core]
	fsmonitor = false
[credential]
	helper =
`

// The private /tmp and /dev/shm a command gets (tmpfs, in its own mount namespace,
// their pages charged to its cgroup): bytes and entries.
const (
	TmpBytes   = 256 << 20
	TmpEntries = 65536
	ShmBytes   = 64 << 20
	ShmEntries = 4096
)

// devices are the device files a command may use.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// enterPrivateRoot gives the helper, and what it execs, a root of its own: a tmpfs
// holding only the system directories (read-only), the workspace (read-write, or
// read-only), a few devices, a fresh /proc of the command's PID namespace and an empty
// private /tmp and /dev/shm, each of a bounded size — then pivots into it. Nothing else of the host's filesystem exists
// for the command: no daemon's socket (/run/docker.sock …), no other user's files.
// The workspace is shown through mountWorkspace (the command owns its files; its
// writes go to a layer of their own): the returned layers hold them. Landlock still
// applies on top. Paths keep their host names. A long-lived program's DataDir, and
// a command's Home, are bound read-write as they are (their writes land at once,
// and stay).
func enterPrivateRoot(spec Spec, userns int) (*layers, error) {
	workspace, readOnly, systemDirs := spec.Workspace, spec.WorkspaceReadOnly, spec.ReadOnly
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make mounts private: %w", err)
	}
	// The helper's own view of /proc becomes its PID namespace's: the host's would
	// name other processes by the PIDs of this namespace's.
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return nil, fmt.Errorf("mount /proc: %w", err)
	}
	base := rootBase
	if err := os.MkdirAll(base, 0o700); err != nil {
		base = filepath.Join(os.TempDir(), "turnlog-sandbox")
		if err := os.MkdirAll(base, 0o700); err != nil {
			return nil, err
		}
	}
	if err := syscall.Mount("tmpfs", base, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return nil, fmt.Errorf("root tmpfs: %w", err)
	}
	for _, d := range systemDirs {
		if err := mirror(base, d, true); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(base+"/dev", 0o755); err != nil {
		return nil, err
	}
	for _, d := range devices {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if err := os.WriteFile(base+d, nil, 0o666); err != nil {
			return nil, err
		}
		if err := syscall.Mount(d, base+d, "", syscall.MS_BIND, ""); err != nil {
			return nil, fmt.Errorf("bind %s: %w", d, err)
		}
	}
	for link, target := range map[string]string{"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, base+link); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"/proc", "/tmp"} {
		if err := os.MkdirAll(base+d, 0o1777); err != nil {
			return nil, err
		}
	}
	if err := syscall.Mount("proc", base+"/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return nil, fmt.Errorf("mount /proc: %w", err)
	}
	if err := syscall.Mount("tmpfs", base+"/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", TmpBytes, TmpEntries)); err != nil {
		return nil, fmt.Errorf("mount /tmp: %w", err)
	}
	if err := os.MkdirAll(base+"/dev/shm", 0o1777); err != nil {
		return nil, err
	}
	if err := syscall.Mount("tmpfs", base+"/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, fmt.Sprintf("mode=1777,size=%d,nr_inodes=%d", ShmBytes, ShmEntries)); err != nil {
		return nil, fmt.Errorf("mount /dev/shm: %w", err)
	}
	if err := os.Mkdir(base+tmpHome, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chown(base+tmpHome, CommandUID, CommandUID); err != nil {
		return nil, err
	}
	// The workspace last: it may lie under /tmp, which is the command's own by now.
	lay, err := mountWorkspace(workspace, base+workspace, readOnly, spec.WriteBytes, spec.WriteEntries, userns)
	if err != nil {
		return nil, err
	}
	for _, d := range spec.ownDirs() {
		if err := mirror(base, d, false); err != nil {
			return nil, err
		}
		if err := syscall.Mount("", base+d, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
			return nil, fmt.Errorf("directory %s: %w", d, err)
		}
	}
	// What a masked file is bound to: empty, read-only, a regular file (a device
	// node would not open under bubblewrap's user namespace, where mounts are nodev).
	if err := os.WriteFile(base+emptyFile, nil, 0o444); err != nil {
		return nil, err
	}
	if err := os.WriteFile(base+gitConfigFile, []byte(gitConfig), 0o444); err != nil {
		return nil, err
	}
	if err := syscall.Mount("", base, "", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
		return nil, fmt.Errorf("root read-only: %w", err)
	}
	if err := os.Chdir(base); err != nil {
		return nil, err
	}
	if err := syscall.PivotRoot(".", "."); err != nil {
		return nil, fmt.Errorf("pivot_root: %w", err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil { // the old root, stacked under the new
		return nil, fmt.Errorf("detach the old root: %w", err)
	}
	return lay, os.Chdir(workspace)
}

// mirror makes path exist under base as it is on the host: a directory bound there
// (read-only when ro), or the same symlink.
func mirror(base, path string, ro bool) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	if err := os.MkdirAll(filepath.Dir(base+path), 0o755); err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return err
		}
		return os.Symlink(target, base+path)
	}
	if err := os.MkdirAll(base+path, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount(path, base+path, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", path, err)
	}
	if ro {
		if err := syscall.Mount("", base+path, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", path, err)
		}
	}
	return nil
}

// ownDirs are the directories bound read-write as they are: a long-lived program's
// data directory, a command's home.
func (s Spec) ownDirs() []string {
	var out []string
	for _, d := range []string{s.DataDir, s.Home} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}
