package sandbox

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestAProxyThreadLivesOn: the thread a proxied command was started from lives on
// once the command ended (back in turnlog's network namespace): a thread that ended
// would take with it, by their parent-death signal, every process it had started
// before — another command's helper, an MCP server. Not parallel: it sets a hook.
func TestAProxyThreadLivesOn(t *testing.T) {
	seen := make(chan int, 1)
	proxyThreadSeen = func(tid int) { seen <- tid }
	defer func() { proxyThreadSeen = nil }()
	cmd := exec.Command("true")
	ln, release, err := startBehindProxy(cmd, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	ln.Close()
	release()
	tid := <-seen
	// A thread that ends does so as soon as its goroutine has: it is looked for a
	// while after.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("/proc/self/task/" + itoa(tid)); err != nil {
			t.Fatalf("the proxy's thread %d ended with its command", tid)
		}
	}
	raw, err := os.Readlink("/proc/self/task/" + itoa(tid) + "/ns/net")
	own, _ := os.Readlink("/proc/self/ns/net")
	if err != nil || raw != own {
		t.Fatalf("the proxy's thread is in network namespace %s, turnlog's is %s (%v)", raw, own, err)
	}
}

func itoa(n int) string { return string(appendInt(nil, n)) }

func appendInt(b []byte, n int) []byte {
	if n >= 10 {
		b = appendInt(b, n/10)
	}
	return append(b, byte('0'+n%10))
}
