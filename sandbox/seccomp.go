package sandbox

import (
	"runtime"
	"syscall"
	"unsafe"
)

// The seccomp filter keeps the kernel surface of a command small, as container
// runtimes' default profiles do: calls no ordinary program needs — the keyrings, bpf,
// perf events, io_uring, kexec, file handles, userfaultfd, the mount family, namespace
// changes, module loading, clocks, swap, reboot — answer EPERM; new user namespaces
// are refused (in one, an unprivileged process holds every capability again over
// kernel code escapes have used); sockets are limited to the unix, IPv4, IPv6 and
// netlink families (netlink for `ip` and Go's net.Interfaces; vsock and the rest
// answer EAFNOSUPPORT); a command may trace its own processes (strace, a debugger),
// never the namespace's first one (ptrace and process_vm_* of pid 1). clone3 and openat2 carry their flags in memory, which a filter
// cannot read, so they answer ENOSYS and the C library falls back to clone and openat,
// which it can; so does every call numbered past the newest this filter knows, so a
// call added to a later kernel cannot slip past it. Other architectures' calls (x32,
// 32-bit) are refused.
const (
	prSetSeccomp      = 22 // PR_SET_SECCOMP
	seccompModeFilter = 2  // SECCOMP_MODE_FILTER
	seccompRetAllow   = 0x7fff0000
	seccompRetErrno   = 0x00050000
	cloneNewUser      = 0x10000000 // CLONE_NEWUSER
	bpfLdW            = 0x20       // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK           = 0x15       // BPF_JMP | BPF_JEQ | BPF_K
	bpfJsetK          = 0x45       // BPF_JMP | BPF_JSET | BPF_K
	bpfJgtK           = 0x25       // BPF_JMP | BPF_JGT | BPF_K
	bpfRetK           = 0x06       // BPF_RET | BPF_K
	offsetNr          = 0
	offsetArch        = 4
	offsetArg0        = 16 // low 32 bits of args[0] (little-endian)
	offsetArg1        = 24
	auditArchX86_64   = 0xc000003e
	auditArchAArch64  = 0xc00000b7
	afUnix, afInet    = 1, 2
	afInet6, afNetlnk = 10, 16
)

type sockFilter struct {
	code uint16
	jt   uint8
	jf   uint8
	k    uint32
}

type sockFprog struct {
	len    uint16
	filter *sockFilter
}

// syscallTable is one architecture's numbers for what the filter looks at.
type syscallTable struct {
	arch                                    uint32
	newest                                  uint32 // the highest call number the filter knows
	clone, unshare, clone3, openat2, socket uint32
	socketpair                              uint32
	ptrace, processVMRead, processVMWrite   uint32
	refused                                 []uint32 // answer EPERM
}

// The refused calls, by name: add_key request_key keyctl bpf perf_event_open
// io_uring_setup io_uring_enter io_uring_register kexec_load kexec_file_load
// open_by_handle_at name_to_handle_at userfaultfd mount umount2 pivot_root open_tree
// move_mount fsopen fsconfig fsmount fspick mount_setattr setns init_module
// finit_module delete_module reboot swapon swapoff acct settimeofday clock_settime
// adjtimex clock_adjtime syslog quotactl fanotify_init vhangup — and on x86_64 also
// iopl, ioperm, uselib, lookup_dcookie.
var (
	tableAMD64 = syscallTable{arch: auditArchX86_64, newest: 466, clone: 56, unshare: 272, clone3: 435, openat2: 437, socket: 41, socketpair: 53,
		ptrace: 101, processVMRead: 310, processVMWrite: 311,
		refused: []uint32{248, 249, 250, 321, 298, 425, 426, 427, 246, 320, 304, 303, 323, 165, 166, 155, 428, 429, 430, 431, 432, 433, 442, 308,
			175, 313, 176, 169, 167, 168, 163, 164, 227, 159, 305, 103, 179, 300, 153, 172, 173, 134, 212}}
	tableARM64 = syscallTable{arch: auditArchAArch64, newest: 466, clone: 220, unshare: 97, clone3: 435, openat2: 437, socket: 198, socketpair: 199,
		ptrace: 117, processVMRead: 270, processVMWrite: 271,
		refused: []uint32{217, 218, 219, 280, 241, 425, 426, 427, 104, 294, 265, 264, 282, 40, 39, 41, 428, 429, 430, 431, 432, 433, 442, 268,
			105, 273, 106, 142, 224, 225, 89, 170, 112, 171, 266, 116, 60, 262, 58}}
)

// commandFilter is the filter for this architecture; nil where turnlog does not
// know the system call numbers (the call then fails closed).
func commandFilter() []sockFilter {
	switch runtime.GOARCH {
	case "amd64":
		return assemble(tableAMD64)
	case "arm64":
		return assemble(tableARM64)
	}
	return nil
}

// assemble builds the program: a jump to a label (always forward, as BPF requires)
// is resolved once every instruction's place is known.
func assemble(t syscallTable) []sockFilter {
	type insn struct {
		sockFilter
		jt, jf string // labels; "" falls through
	}
	var prog []insn
	labels := map[string]int{}
	at := func(l string) { labels[l] = len(prog) }
	op := func(code uint16, k uint32, jt, jf string) {
		prog = append(prog, insn{sockFilter{code: code, k: k}, jt, jf})
	}
	ret := func(k uint32) { op(bpfRetK, k, "", "") }

	op(bpfLdW, offsetArch, "", "")
	op(bpfJeqK, t.arch, "", "eperm") // another ABI: refuse every call of it
	op(bpfLdW, offsetNr, "", "")
	op(bpfJgtK, t.newest, "enosys", "") // x32 calls (bit 30 set) land here too
	for _, nr := range t.refused {
		op(bpfJeqK, nr, "eperm", "")
	}
	op(bpfJeqK, t.clone3, "enosys", "")
	op(bpfJeqK, t.openat2, "enosys", "")
	op(bpfJeqK, t.clone, "flags", "")
	op(bpfJeqK, t.unshare, "flags", "")
	op(bpfJeqK, t.ptrace, "pid1-arg1", "")
	op(bpfJeqK, t.processVMRead, "pid1-arg0", "")
	op(bpfJeqK, t.processVMWrite, "pid1-arg0", "")
	op(bpfJeqK, t.socket, "family", "")
	op(bpfJeqK, t.socketpair, "family", "allow")
	at("pid1-arg1")
	op(bpfLdW, offsetArg1, "", "")
	op(bpfJeqK, 1, "eperm", "allow")
	at("pid1-arg0")
	op(bpfLdW, offsetArg0, "", "")
	op(bpfJeqK, 1, "eperm", "allow")
	at("flags")
	op(bpfLdW, offsetArg0, "", "")
	op(bpfJsetK, cloneNewUser, "eperm", "allow")
	at("family")
	op(bpfLdW, offsetArg0, "", "")
	for _, f := range []uint32{afUnix, afInet, afInet6, afNetlnk} {
		op(bpfJeqK, f, "allow", "")
	}
	ret(seccompRetErrno | uint32(syscall.EAFNOSUPPORT))
	at("eperm")
	ret(seccompRetErrno | uint32(syscall.EPERM))
	at("enosys")
	ret(seccompRetErrno | uint32(syscall.ENOSYS))
	at("allow")
	ret(seccompRetAllow)

	out := make([]sockFilter, len(prog))
	for i, in := range prog {
		out[i] = in.sockFilter
		for _, j := range []struct {
			label string
			off   *uint8
		}{{in.jt, &out[i].jt}, {in.jf, &out[i].jf}} {
			if j.label != "" {
				*j.off = uint8(labels[j.label] - i - 1)
			}
		}
	}
	return out
}

// installSeccomp installs filter on the calling thread (no_new_privs must be set).
func installSeccomp(filter []sockFilter) syscall.Errno {
	if len(filter) == 0 {
		return syscall.ENOSYS
	}
	prog := sockFprog{len: uint16(len(filter)), filter: &filter[0]}
	_, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog)))
	return e
}
