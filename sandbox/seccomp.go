package sandbox

import (
	"runtime"
	"syscall"
	"unsafe"
)

// A seccomp filter takes one kernel surface away from commands: new user
// namespaces. In one, an unprivileged process holds every capability again (over that
// namespace), which opens kernel code — netfilter, filesystems — that sandbox escapes
// have used. clone3 cannot be inspected (its flags are in memory), so it answers
// ENOSYS and the C library falls back to clone, which can.
const (
	prSetSeccomp       = 22 // PR_SET_SECCOMP
	seccompModeFilter  = 2  // SECCOMP_MODE_FILTER
	seccompRetAllow    = 0x7fff0000
	seccompRetErrno    = 0x00050000
	cloneNewUser       = 0x10000000 // CLONE_NEWUSER
	bpfLdW             = 0x20       // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK            = 0x15       // BPF_JMP | BPF_JEQ | BPF_K
	bpfJsetK           = 0x45       // BPF_JMP | BPF_JSET | BPF_K
	bpfJgeK            = 0x35       // BPF_JMP | BPF_JGE | BPF_K
	x32SyscallBit      = 0x40000000 // x32 system calls share x86_64's arch
	bpfRetK            = 0x06       // BPF_RET | BPF_K
	offsetNr           = 0
	offsetArch         = 4
	offsetArg0         = 16 // low 32 bits of args[0] (little-endian)
	auditArchX86_64    = 0xc000003e
	auditArchAArch64   = 0xc00000b7
	errnoPerm, errnoNS = uint32(syscall.EPERM), uint32(syscall.ENOSYS)
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

// commandFilter is the filter for this architecture; nil where turnlog does
// not know the system call numbers (the call then fails closed).
func commandFilter() []sockFilter {
	var arch, unshare, clone, clone3 uint32
	switch runtime.GOARCH {
	case "amd64":
		arch, unshare, clone, clone3 = auditArchX86_64, 272, 56, 435
	case "arm64":
		arch, unshare, clone, clone3 = auditArchAArch64, 97, 220, 435
	default:
		return nil
	}
	return []sockFilter{
		{bpfLdW, 0, 0, offsetArch},
		{bpfJeqK, 1, 0, arch},                        // another ABI (x32, 32-bit):
		{bpfRetK, 0, 0, seccompRetErrno | errnoPerm}, // refuse every call of it
		{bpfLdW, 0, 0, offsetNr},
		{bpfJeqK, 4, 0, unshare}, // → check flags
		{bpfJeqK, 3, 0, clone},   // → check flags
		{bpfJeqK, 1, 0, clone3},  // → ENOSYS
		{bpfRetK, 0, 0, seccompRetAllow},
		{bpfRetK, 0, 0, seccompRetErrno | errnoNS},
		{bpfLdW, 0, 0, offsetArg0},
		{bpfJsetK, 0, 1, cloneNewUser},
		{bpfRetK, 0, 0, seccompRetErrno | errnoPerm},
		{bpfRetK, 0, 0, seccompRetAllow},
	}
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
