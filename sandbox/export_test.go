package sandbox

import "os"

// SetBeforeOpen lets a test act between a path's check and its open.
func SetBeforeOpen(f func(rel string)) { beforeOpen = f }

// WithPause is s with its apply paused once it has done share ("3/10") of its
// steps: the helper says "paused" on w and waits to be killed.
func WithPause(s Spec, w *os.File, share string) Spec {
	s.testPause, s.testShare = w, share
	return s
}

// WithStarted is s whose Run calls started with the helper's process id once it
// started.
func WithStarted(s Spec, started func(pid int)) Spec {
	s.testStarted = started
	return s
}

// WithEnded is s whose Run calls ended once the command has ended, before its
// apply.
func WithEnded(s Spec, ended func()) Spec {
	s.testEnded = ended
	return s
}

// WaitForGroups waits until every command's cgroup is back in the pool (or gone).
func WaitForGroups() { cgroupPool.pending.Wait() }

// WithHelper is s whose helper is the binary at path (a built turnlog) rather than
// this test binary.
func WithHelper(s Spec, path string) Spec {
	s.testHelper = path
	return s
}

// SetRestoreAfterOp has every restore call f before its first step and after each.
func SetRestoreAfterOp(f func(done, all int)) { restoreAfterOp = f }

// SetBranchWaiting has every branch copy call f each time it finds an apply of its
// source waiting to be settled.
func SetBranchWaiting(f func()) { branchWaiting = f }
