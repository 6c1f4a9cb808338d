package sandbox

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// startBehindProxy starts cmd in a network namespace of its own whose only way out is
// a listener turnlog holds inside it: a goroutine locks its thread, moves the thread
// into a new namespace, brings loopback up, listens there and starts the command
// from that thread (the child inherits the namespace). Once release is called after
// the command ended — the child's parent-death signal follows the thread that
// started it — the thread goes back to turnlog's own namespace and to the Go
// runtime. It must not end instead: a thread that ends takes with it (by their
// parent-death signal) every child it forked before it was locked here, another
// command's helper or an MCP server among them. Only a thread that cannot go back
// ends.
func startBehindProxy(cmd *exec.Cmd, prepare func(port int)) (ln net.Listener, release func(), err error) {
	type started struct {
		ln  net.Listener
		err error
	}
	done := make(chan started, 1)
	hold := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if proxyThreadSeen != nil {
			defer proxyThreadSeen(unix.Gettid())
		}
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread() // nothing changed yet
			done <- started{err: fmt.Errorf("network namespace: %w", err)}
			return
		}
		defer func() {
			if unix.Setns(own, unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			}
			unix.Close(own)
		}()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- started{err: fmt.Errorf("network namespace: %w", err)}
			return
		}
		if err := loopbackUp(); err != nil {
			done <- started{err: fmt.Errorf("loopback: %w", err)}
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			done <- started{err: fmt.Errorf("proxy listener: %w", err)}
			return
		}
		prepare(ln.Addr().(*net.TCPAddr).Port)
		if err := cmd.Start(); err != nil {
			ln.Close()
			done <- started{err: err}
			return
		}
		done <- started{ln: ln}
		<-hold
	}()
	s := <-done
	if s.err != nil {
		return nil, nil, s.err
	}
	return s.ln, func() { close(hold) }, nil
}

// proxyThreadSeen, set only by a test, hears which thread a proxy's goroutine ran
// on, as it ends.
var proxyThreadSeen func(tid int)

// loopbackUp brings up the current network namespace's loopback interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
