package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// MinProcesses is the smallest process limit the kernel takes: a PID namespace's
// pid_max may not go below 301.
const MinProcesses = 300

// pidMaxPerNamespace says whether this kernel keeps pid_max per PID namespace (Linux
// 6.14 and later). Before that the sysctl is global: writing it from a sandbox would
// limit the whole machine, so an older kernel gets no process limit and the sandbox
// fails closed instead.
func pidMaxPerNamespace() (bool, string) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return false, err.Error()
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	release := b.String()
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false, "unreadable kernel release " + release
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if err1 != nil || err2 != nil {
		return false, "unreadable kernel release " + release
	}
	if major > 6 || major == 6 && minor >= 14 {
		return true, "kernel " + release
	}
	return false, "kernel " + release + " keeps pid_max global (6.14 keeps it per PID namespace)"
}

// limitProcesses caps how many processes the helper's PID namespace can hold: its
// pid_max is set to one more than the limit, so a fork bomb runs out of PIDs. The
// helper is the namespace's first process, and the sysctl it writes is its own
// namespace's.
func limitProcesses(n int) error {
	if ok, why := pidMaxPerNamespace(); !ok {
		return fmt.Errorf("no per-namespace process limit: %s", why)
	}
	return os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(n+1)), 0)
}
