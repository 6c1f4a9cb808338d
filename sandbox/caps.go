package sandbox

import (
	"syscall"
	"unsafe"
)

// Capabilities: turnlog may run as root, and a command must not keep root's powers —
// loading a kernel module from the workspace, setting the clock, reading any file
// whatever its mode. Landlock limits paths, not capabilities; these calls take every
// capability away from the thread that becomes the command, for good.
const (
	prCapbsetDrop      = 24 // PR_CAPBSET_DROP
	prSetSecurebits    = 28 // PR_SET_SECUREBITS
	prCapAmbient       = 47 // PR_CAP_AMBIENT
	prCapAmbientClear  = 4  // PR_CAP_AMBIENT_CLEAR_ALL
	capVersion3        = 0x20080522
	lastCapabilityBits = 64
	// SECBIT_NOROOT | SECBIT_NO_SETUID_FIXUP | SECBIT_KEEP_CAPS_LOCKED |
	// SECBIT_NO_CAP_AMBIENT_RAISE, each with its lock: exec as root grants nothing.
	secureBits = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
)

type capHeader struct {
	version uint32
	pid     int32
}

type capData struct{ effective, permitted, inheritable uint32 }

// dropCapabilities empties the calling thread's bounding, ambient, inheritable,
// permitted and effective sets and locks root's exec rules, so that nothing the thread
// execs (as root or not) gets a capability back. Raw syscalls only: it runs between
// Landlock and execve on a thread the Go runtime no longer schedules anything on.
func dropCapabilities() syscall.Errno {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetSecurebits, secureBits, 0); e != 0 && e != syscall.EPERM {
		return e
	}
	for c := uintptr(0); c < lastCapabilityBits; c++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, c, 0); e != 0 && e != syscall.EINVAL {
			return e
		}
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClear, 0, 0, 0, 0); e != 0 && e != syscall.EINVAL {
		return e
	}
	hdr := capHeader{version: capVersion3}
	var data [2]capData
	_, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	return e
}
