package sandbox

import (
	"syscall"
)

// Capabilities: the command runs as CommandUID, so setuid from root clears its
// permitted and effective capabilities, and no_new_privs keeps an exec from granting
// any. The bounding set is emptied too, on the thread the command is forked from, so
// that nothing it ever execs could get a capability back by any other way.
const (
	prCapbsetDrop      = 24 // PR_CAPBSET_DROP
	prCapAmbient       = 47 // PR_CAP_AMBIENT
	prCapAmbientClear  = 4  // PR_CAP_AMBIENT_CLEAR_ALL
	lastCapabilityBits = 64
)

// dropBoundingSet empties the calling thread's capability bounding set and ambient
// set (its own permitted and effective sets stay: the fork still needs them to change
// to CommandUID).
func dropBoundingSet() syscall.Errno {
	for c := uintptr(0); c < lastCapabilityBits; c++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prCapbsetDrop, c, 0); e != 0 && e != syscall.EINVAL {
			return e
		}
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClear, 0, 0, 0, 0); e != 0 && e != syscall.EINVAL {
		return e
	}
	return 0
}
