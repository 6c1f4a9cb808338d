package systemtest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/turnlog/turnlog/adapters/stores/postgres"
)

// TestSandboxedCommandsNeverReachTheDatabase: on PostgreSQL, a bash command of an app
// whose policy allows the network to the database's very host still cannot reach the
// database's port — the proxy refuses it, naming it turnlog's own — while another
// port on that host, which the rule allows, is reached (so the refusal is the
// database's, not the rule's).
func TestSandboxedCommandsNeverReachTheDatabase(t *testing.T) {
	t.Parallel()
	dsn := postgres.TestSchemaDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Fatalf("the tests' PostgreSQL listens on %s: this test needs it on 127.0.0.1", u.Host)
	}
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var reached atomic.Int64
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\nnot db\n")
			c.Close()
		}
	}()
	ws := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	config := strings.Replace(coderConfig, "workspace: WORKSPACE", `workspace: WORKSPACE
      rules:
        - {name: local, decision: allow, actions: [network], domains: ["127.0.0.1"]}`, 1)
	config = strings.Replace(strings.Replace(config, "mode: workspace-write", "mode: network-allowlist", 1), "WORKSPACE", ws, 1)
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	command := fmt.Sprintf(`run curl -s -m 5 http://127.0.0.1:%s/; echo; curl -s -m 5 http://127.0.0.1:%d/`, u.Port(), other.Addr().(*net.TCPAddr).Port)
	out, stderr, err := runCLI(t, "run", "--config", cfg, "--db", dsn, "--app", "coder", command)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "127.0.0.1:"+u.Port()+" is turnlog's own") {
		t.Errorf("the database's port was not refused:\n%s", out)
	}
	if !strings.Contains(out, "not db") || reached.Load() != 1 {
		t.Errorf("the port the rule allows was not reached (%d connections):\n%s", reached.Load(), out)
	}
}
