package sandbox_test

import (
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// kernelProbe tries calls the seccomp filter refuses and prints "name result errno".
// The first part's calls succeed for an unprivileged process on a kernel that lets
// them through, and are harmless (nothing is dialled, mounted or loaded): it also runs
// outside the sandbox, as nobody, to show they reach the kernel there. The rest —
// privileged calls, and tracing pid 1 — runs only inside (PROBE_ALL=1): never as root
// on the host.
const kernelProbe = `
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *args)
    print(name, r, ctypes.get_errno(), flush=True)
buf = ctypes.create_string_buffer(256)
call("add_key", 248, b"user", b"turnlog-probe", b"v", ctypes.c_size_t(1), ctypes.c_int(-2))
call("keyctl", 250, ctypes.c_int(0), ctypes.c_int(-2), ctypes.c_int(1))
call("io_uring_setup", 425, ctypes.c_uint(1), buf)
attr = ctypes.create_string_buffer(128)
attr[0:4] = (1).to_bytes(4, "little")      # PERF_TYPE_SOFTWARE
attr[4:8] = (128).to_bytes(4, "little")    # size
attr[40:48] = ((1 << 5) | (1 << 6)).to_bytes(8, "little")  # exclude_kernel, exclude_hv
call("perf_event_open", 298, attr, ctypes.c_int(0), ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_ulong(0))
call("userfaultfd", 323, ctypes.c_int(1))  # UFFD_USER_MODE_ONLY
call("openat2", 437, ctypes.c_int(-100), b"/", ctypes.create_string_buffer(24), ctypes.c_size_t(24))
call("newer_than_the_filter", 467, ctypes.c_int(-1), None, ctypes.c_uint(0), None, ctypes.c_size_t(0))
call("vsock", 41, ctypes.c_int(40), ctypes.c_int(1), ctypes.c_int(0))
call("netlink", 41, ctypes.c_int(16), ctypes.c_int(3), ctypes.c_int(0))
if os.environ.get("PROBE_ALL") != "1":
    raise SystemExit(0)
call("bpf", 321, ctypes.c_int(0), buf, ctypes.c_uint(72))
call("kexec_load", 246, ctypes.c_ulong(0), ctypes.c_ulong(0), None, ctypes.c_ulong(0))
call("open_by_handle_at", 304, ctypes.c_int(-100), buf, ctypes.c_int(0))
call("mount", 165, b"none", b"/tmp", b"tmpfs", ctypes.c_ulong(0), None)
call("fsopen", 430, b"tmpfs", ctypes.c_uint(0))
call("packet", 41, ctypes.c_int(17), ctypes.c_int(3), ctypes.c_int(0))
call("alg", 41, ctypes.c_int(38), ctypes.c_int(5), ctypes.c_int(0))
call("ptrace_first_process", 101, ctypes.c_long(16), ctypes.c_long(1), None, None)
pid = os.fork()
if pid == 0:
    import time; time.sleep(30); os._exit(0)
call("ptrace_own_child", 101, ctypes.c_long(16), ctypes.c_long(pid), None, None)
os.kill(pid, 9)
`

// TestKernelSurfaceIsSmall: what the seccomp filter refuses fails inside a command —
// calls that succeed for the same probe outside, where they reach the kernel — while
// what ordinary tools need (netlink, tracing one's own children) still works, and the
// namespace's first process (the helper) cannot be traced.
func TestKernelSurfaceIsSmall(t *testing.T) {
	t.Parallel()
	if runtime.GOARCH != "amd64" {
		t.Skip("the probe uses x86_64 call numbers")
	}
	parse := func(out string) map[string][2]string {
		m := map[string][2]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				m[f[0]] = [2]string{f[1], f[2]}
			}
		}
		return m
	}
	hostOut, err := exec.Command("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "/usr/bin/python3", "-c", kernelProbe).Output()
	if err != nil {
		t.Fatalf("the probe outside the sandbox: %v", err)
	}
	host := parse(string(hostOut))
	s, _ := spec(t)
	res := run(t, s, "PROBE_ALL=1 python3 -c '"+strings.ReplaceAll(kernelProbe, "'", `'"'"'`)+"'")
	inside := parse(res.Stdout)
	if len(host) != 9 || len(inside) != 18 {
		t.Fatalf("the probe: outside %v, inside %+v", host, res)
	}
	errnoOf := func(e syscall.Errno) string { return strconv.Itoa(int(e)) }
	for _, name := range []string{"add_key", "keyctl", "io_uring_setup", "perf_event_open", "userfaultfd", "bpf", "kexec_load", "open_by_handle_at",
		"mount", "fsopen", "vsock", "packet", "alg", "openat2", "newer_than_the_filter", "ptrace_first_process"} {
		got := inside[name]
		if got[0] != "-1" {
			t.Errorf("%s succeeded inside the sandbox (%s); outside: %v", name, got[0], host[name])
		}
	}
	for _, name := range []string{"add_key", "keyctl", "io_uring_setup", "perf_event_open", "userfaultfd", "openat2"} {
		if host[name][0] == "-1" {
			t.Logf("note: %s fails outside the sandbox too here (%v)", name, host[name])
		}
	}
	for name, want := range map[string]syscall.Errno{"openat2": syscall.ENOSYS, "newer_than_the_filter": syscall.ENOSYS, "vsock": syscall.EAFNOSUPPORT, "add_key": syscall.EPERM} {
		if got := inside[name][1]; got != errnoOf(want) {
			t.Errorf("%s: errno %s, want %d (%v)", name, got, want, want)
		}
	}
	if host["newer_than_the_filter"][1] == errnoOf(syscall.ENOSYS) {
		t.Logf("note: call 467 does not exist on this kernel; the ENOSYS inside proves less")
	}
	if res := run(t, s, "ip -o link show lo"); res.ExitCode != 0 || !strings.Contains(res.Stdout, "lo") {
		t.Errorf("ip (netlink) fails inside the sandbox: %+v", res)
	}
	for _, name := range []string{"netlink", "ptrace_own_child"} {
		if inside[name][0] == "-1" {
			t.Errorf("%s fails inside the sandbox (errno %s): ordinary tools need it", name, inside[name][1])
		}
	}
}
