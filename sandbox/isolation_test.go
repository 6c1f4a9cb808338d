package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/sandbox"
)

// Commands of different users share nothing: no IPC namespace, no shared memory, no
// memory charge left in a cgroup for the next one.

// TestCommandsShareNoIPC: while alice's command holds a SysV shared-memory segment
// and a message queue, bob's sees neither, and cannot remove them; alice's are
// still there for her; and none is left on the host once her command ended.
func TestCommandsShareNoIPC(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("ipcmk"); err != nil {
		t.Fatal("ipcmk (util-linux) is needed")
	}
	alice, _ := spec(t)
	bob, _ := spec(t)
	hostBefore := hostSegments(t)
	done := make(chan *sandbox.Result, 1)
	started := make(chan struct{})
	go func() {
		res, err := sandbox.Run(context.Background(), sandbox.WithStarted(alice, func(int) { close(started) }),
			`ipcmk -M 4096 -p 0600 >/dev/null && ipcmk -Q -p 0600 >/dev/null && sleep 3; echo "alice sees $(ipcs -m | grep -c '^0x') segment and $(ipcs -q | grep -c '^0x') queue"`)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	// In one IPC namespace bob would see alice's at once; in his own, never: he
	// looks for a second, while alice holds hers for three.
	res := run(t, bob, `for i in $(seq 1 20); do n=$(ipcs -m -q | grep -c '^0x'); [ "$n" != 0 ] && break; sleep 0.05; done; echo "bob sees $n"; ipcrm -a 2>&1; ipcs -m -q`)
	aliceRes := <-done
	if !strings.Contains(res.Stdout, "bob sees 0") {
		t.Fatalf("bob saw another command's IPC objects: %s", res.Stdout)
	}
	if aliceRes == nil || !strings.Contains(aliceRes.Stdout, "alice sees 1 segment and 1 queue") {
		t.Fatalf("alice's own IPC objects: %+v", aliceRes)
	}
	if after := hostSegments(t); after > hostBefore {
		t.Fatalf("a command's segment outlived it on the host: %d segments of the sandbox's uid, %d before", after, hostBefore)
	}
}

// hostSegments counts the host's SysV shared-memory segments owned by the
// sandbox's uid.
func hostSegments(t *testing.T) int {
	t.Helper()
	raw, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 8 && f[7] == fmt.Sprint(sandbox.CommandUID) {
			n++
		}
	}
	return n
}

// TestTmpAndShmAreBounded: a command's /tmp and /dev/shm are its own and of a
// bounded size and number of entries, under either mechanism.
func TestTmpAndShmAreBounded(t *testing.T) {
	t.Parallel()
	s, _ := spec(t)
	res := run(t, s, `for d in /tmp /dev/shm; do head -c 400000000 /dev/zero > $d/big 2>/dev/null || echo "$d full"; rm -f $d/big; done; mkdir /tmp/many && for i in $(seq 1 70000); do : > /tmp/many/$i || { echo "/tmp entries full"; break; }; done 2>/dev/null; df -k /tmp /dev/shm | tail -2`)
	for _, want := range []string{"/tmp full", "/dev/shm full", "/tmp entries full"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("%q not in %s", want, res.Stdout)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		f := strings.Fields(line)
		if len(f) == 6 && (f[5] == "/tmp" || f[5] == "/dev/shm") {
			var kb int64
			fmt.Sscan(f[1], &kb)
			if limit := map[string]int64{"/tmp": sandbox.TmpBytes, "/dev/shm": sandbox.ShmBytes}[f[5]]; kb*1024 > limit {
				t.Errorf("%s holds %d KiB, past %d bytes", f[5], kb, limit)
			}
		}
	}
}

// shmHold fills SIZE bytes of SysV shared memory and leaves it, as a command that
// forgets to remove its segment does.
const shmHold = `python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.restype, libc.shmat.restype = ctypes.c_int, ctypes.c_void_p
size = int(sys.argv[1]) << 20
shm = libc.shmget(0, ctypes.c_size_t(size), 0o1600)
addr = libc.shmat(shm, None, 0)
if shm < 0 or addr in (None, ctypes.c_void_p(-1).value): sys.exit("no segment: %d" % ctypes.get_errno())
ctypes.memset(addr, 1, size)
print("held", size >> 20)
' `

// TestALeakedChargeNeverReachesTheNextCommand: a command that leaves 1.5 GiB of
// shared memory behind in a 2 GiB tree cap does not leave its charge for the next
// command, which uses 1 GiB unharmed: the segment died with its command's IPC
// namespace, and a group is pooled only once nothing but reclaimable cache is left.
// (Not parallel: the next command should get the group the first one gave back.)
func TestALeakedChargeNeverReachesTheNextCommand(t *testing.T) {
	s, _ := spec(t)
	s.TreeMemoryBytes, s.MemoryBytes = 2<<30, 3<<30
	if res := run(t, s, shmHold+"1500"); !strings.Contains(res.Stdout, "held 1500") {
		t.Fatalf("the first command could not hold its memory (the test means nothing): %+v", res)
	}
	sandbox.WaitForGroups()
	res := run(t, s, `python3 -c 'b = bytearray(1 << 30); b[::4096] = b"x" * (len(b) // 4096); print("used 1 GiB")'`)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "used 1 GiB") {
		t.Fatalf("the next command was harmed by what the first left: %+v", res)
	}
}
