package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"
)

// confineMain is the helper's second stage: started by the first as CommandUID (no
// capabilities), it restricts itself — no new privileges, Landlock (or, with
// bubblewrap, bwrap's own namespaces), the seccomp filter, resource limits — and
// becomes the command. It never returns; a step that fails ends it with status 125
// and the reason, so the command never runs less confined than asked.
func confineMain(spec Spec) {
	argv := os.Args[1:]
	bwrap := spec.Mechanism == MechanismBubblewrap
	filter := commandFilter()
	if filter == nil {
		fail("no seccomp filter for %s: the sandbox requires one", runtime.GOARCH)
	}
	if bwrap {
		fd, err := filterFD(filter)
		if err != nil {
			fail("cannot hand the seccomp filter to bwrap: %v", err)
		}
		if argv, err = bubblewrapArgv(spec, argv, fd); err != nil {
			fail("%v", err)
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fail("%v", err)
	}
	os.Unsetenv(helperEnv)
	os.Unsetenv(specEnv)
	// What follows binds the thread that does it and what it execs: this thread
	// restricts itself and becomes the command (or bwrap), and is never handed back to
	// the Go runtime. (Restricting every thread goes through psx, which hangs in a
	// process that is the first of its PID namespace.)
	runtime.LockOSThread()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); errno != 0 {
		fail("no_new_privs: %v", errno)
	}
	if !bwrap { // bwrap loads the filter itself, once its namespaces are made
		if msg := restrictWithLandlock(spec); msg != "" {
			fail("%s", msg)
		}
		if errno := installSeccomp(filter); errno != 0 {
			fail("cannot install the seccomp filter: %v", errno)
		}
	}
	// The limits come last, right before the command starts: this process itself may
	// need more memory than the command may have (a race-detector build does). Nothing
	// is allocated after them: execve's arguments are built first.
	argv0, err := syscall.BytePtrFromString(path)
	if err != nil {
		fail("%v", err)
	}
	args, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		fail("%v", err)
	}
	envv, err := syscall.SlicePtrFromStrings(os.Environ())
	if err != nil {
		fail("%v", err)
	}
	debug.SetGCPercent(-1)
	for _, l := range []struct {
		res   int
		value uint64
		name  string
	}{{syscall.RLIMIT_CPU, spec.CPUSeconds, "cpu"}, {syscall.RLIMIT_AS, spec.MemoryBytes, "memory"}, {syscall.RLIMIT_FSIZE, spec.FileBytes, "file size"}} {
		lim := syscall.Rlimit{Cur: l.value, Max: l.value}
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, uintptr(l.res), uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
			fail("cannot limit %s: %v", l.name, errno)
		}
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)),
		uintptr(unsafe.Pointer(&args[0])), uintptr(unsafe.Pointer(&envv[0])))
	fail("exec %s: %v", argv[0], errno)
}

// fail ends a helper stage with status 125 and the reason: the command did not run.
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, failPrefix+format+"\n", args...)
	os.Exit(helperFail)
}

// filterFD is a descriptor (inherited across exec) from which bwrap reads a seccomp
// program: struct sock_filter entries, in the machine's byte order.
func filterFD(filter []sockFilter) (int, error) {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		return -1, err
	}
	buf := make([]byte, 0, 8*len(filter))
	for _, f := range filter {
		buf = binary.NativeEndian.AppendUint16(buf, f.code)
		buf = append(buf, f.jt, f.jf)
		buf = binary.NativeEndian.AppendUint32(buf, f.k)
	}
	if _, err := syscall.Write(p[1], buf); err != nil {
		return -1, err
	}
	syscall.Close(p[1])
	return p[0], nil // pipe(2) without O_CLOEXEC: bwrap inherits it
}
