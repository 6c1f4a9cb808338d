package sandbox

import (
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// The helper a command is started through: a small binary of its own when turnlog
// was built with one (UseHelper), run from a sealed memory file — its package
// initialization costs a millisecond, turnlog's whole binary's more than ten —,
// else turnlog's own binary.

// helperExe is the helper's memory file, once UseHelper made it.
var helperExe struct {
	sync.Mutex
	path string // /proc/<turnlog's pid>/fd/N: the helper's own descriptors are others by the time it execs
	size int
}

// UseHelper makes binary (the sandbox/helper program, for this machine) the helper
// every command is started through, from a sealed memory file; nil keeps turnlog's
// own binary. main calls it once.
func UseHelper(binary []byte) error {
	if len(binary) == 0 {
		return nil
	}
	fd, err := unix.MemfdCreate("turnlog-helper", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fmt.Errorf("the sandbox's helper: %w", err)
	}
	f := os.NewFile(uintptr(fd), "turnlog-helper")
	if _, err := f.Write(binary); err != nil {
		f.Close()
		return fmt.Errorf("the sandbox's helper: %w", err)
	}
	// Sealed: nothing can change what every command is started through.
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
		f.Close()
		return fmt.Errorf("the sandbox's helper: %w", err)
	}
	helperExe.Lock()
	defer helperExe.Unlock()
	helperExe.path, helperExe.size = fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd()), len(binary)
	return nil // f stays open for the life of the process
}

// helperPath is the binary a helper is started from.
func helperPath() (string, error) {
	helperExe.Lock()
	p := helperExe.path
	helperExe.Unlock()
	if p != "" {
		return p, nil
	}
	return os.Executable()
}

// HelperInUse says which helper commands are started through (for doctor).
func HelperInUse() string {
	helperExe.Lock()
	defer helperExe.Unlock()
	if helperExe.path != "" {
		return fmt.Sprintf("the embedded helper (%.1f MB, run from a sealed memory file)", float64(helperExe.size)/(1<<20))
	}
	return "turnlog's own binary (built without make build: no embedded helper)"
}
