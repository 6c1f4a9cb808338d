package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
)

// startConfined starts the command from a thread of its own that first confines
// itself — no new privileges, Landlock and the seccomp filter (with bubblewrap: the
// filter goes to bwrap, which makes the command's namespaces first) — so that the
// command, forked from that thread as CommandUID with no supplementary groups, holds
// all of it from its first instruction; its first program is bash setting the
// resource limits, which then becomes the command (or bwrap). The thread stays alive
// until done is closed: a child's parent-death signal follows the thread that
// started it.
func startConfined(spec Spec, argv []string, done <-chan struct{}) (int, error) {
	type started struct {
		pid int
		err error
	}
	ch := make(chan started, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread, confined, ends with this goroutine
		pid, err := confineAndStart(spec, argv)
		ch <- started{pid, err}
		if err == nil {
			<-done
		}
	}()
	s := <-ch
	return s.pid, s.err
}

func confineAndStart(spec Spec, argv []string) (int, error) {
	filter := commandFilter()
	if filter == nil {
		return 0, fmt.Errorf("no seccomp filter for %s: the sandbox requires one", runtime.GOARCH)
	}
	files := []uintptr{0, 1, 2}
	if errno := dropBoundingSet(); errno != 0 {
		return 0, fmt.Errorf("cannot empty the capability bounding set: %v", errno)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); errno != 0 {
		return 0, fmt.Errorf("no_new_privs: %v", errno)
	}
	if spec.Mechanism == MechanismBubblewrap {
		fd, err := filterFD(filter)
		if err != nil {
			return 0, fmt.Errorf("cannot hand the seccomp filter to bwrap: %v", err)
		}
		defer syscall.Close(fd)
		files = append(files, uintptr(fd))
		if argv, err = bubblewrapArgv(spec, argv, 3); err != nil {
			return 0, err
		}
	} else {
		if msg := restrictWithLandlock(spec); msg != "" {
			return 0, fmt.Errorf("%s", msg)
		}
		if errno := installSeccomp(filter); errno != 0 {
			return 0, fmt.Errorf("cannot install the seccomp filter: %v", errno)
		}
	}
	bash, err := systemBash()
	if err != nil {
		return 0, err
	}
	dir, err := os.Getwd()
	if err != nil {
		return 0, err
	}
	return syscall.ForkExec(bash, limitedArgv(spec, argv), &syscall.ProcAttr{
		Dir:   dir,
		Env:   commandEnv(),
		Files: files,
		Sys: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: CommandUID, Gid: CommandUID, Groups: []uint32{}},
			Pdeathsig:  syscall.SIGKILL,
		},
	})
}

// limitedArgv is argv run by bash once it has set the resource limits — CPU seconds,
// address space and file size, hard and soft — or, if it cannot, exited with the
// helper's failure status and reason. A bash command (Run's ["bash", "-c", CMD,
// "bash"]) gets the limits in its own first line, which saves starting a second
// shell; anything else is run by a shell that sets them and execs it.
func limitedArgv(spec Spec, argv []string) []string {
	limits := fmt.Sprintf(`ulimit -t %d -v %d -f %d 2>/dev/null || { echo "%scannot set the command's resource limits" >&2; exit %d; }`,
		spec.CPUSeconds, spec.MemoryBytes/1024, spec.FileBytes/1024, failPrefix, helperFail)
	extra := commandExtraEnv(spec)
	if spec.Mechanism == MechanismBubblewrap {
		extra = nil // bwrap sets them (--setenv) for what it runs
	}
	if len(extra) == 0 && len(argv) == 4 && argv[0] == "bash" && argv[1] == "-c" && argv[3] == "bash" {
		return []string{"bash", "-c", limits + "\n" + argv[2]}
	}
	if len(extra) > 0 {
		// Set only for the command, by env once the limits hold: nothing the config
		// names (LD_PRELOAD, BASH_ENV, PATH) reaches this shell before its ulimit.
		return append(append([]string{"bash", "-c", limits + `; exec env "$@"`, "turnlog-limits"}, extra...), argv...)
	}
	return append([]string{"bash", "-c", limits + `; exec "$@"`, "turnlog-limits"}, argv...)
}

// commandExtraEnv is what the command's environment gets beyond the allowlist: the
// spec's Env and, for a long-lived program, TURNLOG_DATA_DIR.
func commandExtraEnv(spec Spec) []string {
	extra := append([]string{}, spec.Env...)
	if spec.DataDir != "" {
		extra = append(extra, "TURNLOG_DATA_DIR="+spec.DataDir)
	}
	return extra
}

// systemBash is the system's bash, by absolute path: never one found on a PATH a
// command could have written to.
func systemBash() (string, error) {
	for _, p := range []string{"/usr/bin/bash", "/bin/bash"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("no /usr/bin/bash or /bin/bash, which sets the command's limits")
}

// commandEnv is the helper's environment (already the allowlisted one) less the
// helper's own variables.
func commandEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != helperEnv && k != specEnv && k != reportEnv && k != usernsEnv && k != masksEnv {
			out = append(out, kv)
		}
	}
	return out
}

// fail ends the helper with status 125 and the reason: the command did not run.
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, failPrefix+format+"\n", args...)
	os.Exit(helperFail)
}

// filterFD is a descriptor from which bwrap reads a seccomp program: struct
// sock_filter entries, in the machine's byte order.
func filterFD(filter []sockFilter) (int, error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return -1, err
	}
	buf := make([]byte, 0, 8*len(filter))
	for _, f := range filter {
		buf = binary.NativeEndian.AppendUint16(buf, f.code)
		buf = append(buf, f.jt, f.jf)
		buf = binary.NativeEndian.AppendUint32(buf, f.k)
	}
	if _, err := syscall.Write(p[1], buf); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return -1, err
	}
	syscall.Close(p[1])
	return p[0], nil // ForkExec hands it to the child as descriptor 3
}
