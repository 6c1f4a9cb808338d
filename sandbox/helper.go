package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// IsHelper says whether this process is the sandbox's helper (turnlog started it to
// set a command's limits up from inside its namespaces). main calls HelperMain then.
func IsHelper() bool { return os.Getenv(helperEnv) == "1" }

// BecomeHelperIfAsked runs HelperMain (which never returns) when this process was
// started as the helper; a binary that runs sandboxed commands — turnlog, or a test
// binary — calls it first thing.
func BecomeHelperIfAsked() {
	if IsHelper() {
		HelperMain()
	}
}

// HelperMain applies the limits of the spec it was given — a private root, Landlock,
// no capabilities, then resource limits — and becomes the command (with bubblewrap:
// the process limit, the masks and the resource limits, then becomes bwrap, which
// builds the root and runs the command). It never returns. Any step that fails ends the
// process with status 125 and the reason, so the command never runs unconfined.
func HelperMain() {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, failPrefix+format+"\n", args...)
		os.Exit(helperFail)
	}
	var spec Spec
	if err := json.Unmarshal([]byte(os.Getenv(specEnv)), &spec); err != nil {
		fail("unreadable spec: %v", err)
	}
	if spec.Unavailable == "pid_max" {
		fail("no per-namespace process limit here, and this sandbox requires one")
	}
	if err := limitProcesses(spec.MaxProcesses); err != nil {
		fail("cannot limit the number of processes: %v", err)
	}
	bwrap := spec.Mechanism == MechanismBubblewrap
	if !bwrap { // bubblewrap builds the command's root itself
		if err := enterPrivateRoot(spec.Workspace, spec.WorkspaceReadOnly, spec.ReadOnly); err != nil {
			fail("cannot set the command's filesystem up: %v", err)
		}
	}
	if err := maskDenied(spec.Workspace); err != nil {
		fail("cannot hide the workspace's denied files: %v", err)
	}
	os.Unsetenv(helperEnv)
	os.Unsetenv(specEnv)
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	// What follows binds the thread that does it and what it execs: this thread
	// restricts itself and becomes the command (or bwrap), and is never handed back to
	// the Go runtime. (Restricting every thread goes through psx, which hangs in a
	// process that is the first of its PID namespace.)
	runtime.LockOSThread()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); errno != 0 {
		fail("no_new_privs: %v", errno)
	}
	if !bwrap { // bwrap drops the command's capabilities itself (--cap-drop ALL)
		if msg := restrictWithLandlock(spec); msg != "" {
			fail("%s", msg)
		}
		if errno := dropCapabilities(); errno != 0 {
			fail("cannot drop capabilities: %v", errno)
		}
	}
	if errno := installSeccomp(userNamespaceFilter()); errno != 0 {
		fail("cannot install the seccomp filter (user namespaces): %v", errno)
	}
	// The limits come last, right before the command starts: this helper itself may
	// need more memory than the command may have (a race-detector build does). Nothing
	// is allocated after them: execve's arguments are built first.
	argv0, err := syscall.BytePtrFromString(path)
	if err != nil {
		fail("%v", err)
	}
	argv, err := syscall.SlicePtrFromStrings(os.Args[1:])
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
		uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
	fail("exec %s: %v", os.Args[1], errno)
}

const prSetNoNewPrivs = 38 // PR_SET_NO_NEW_PRIVS

// restrictWithLandlock restricts the calling thread: the workspace, /tmp and the
// system directories only, TCP only to the proxy (or not at all) without the host's
// network, abstract sockets and signals scoped. It says why it could not, or "".
func restrictWithLandlock(spec Spec) string {
	if spec.Unavailable == "landlock" {
		return "landlock is not available here, and this sandbox requires it"
	}
	ws := landlock.RWDirs(spec.Workspace)
	if spec.WorkspaceReadOnly {
		ws = landlock.RODirs(spec.Workspace)
	}
	rules := []landlock.Rule{ws, landlock.RWDirs("/tmp"), landlock.RWFiles("/dev/null"), landlock.ROFiles("/dev/urandom", "/dev/zero")}
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
