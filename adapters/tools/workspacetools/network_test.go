package workspacetools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

func bashResult(t *testing.T, bash fsm.Tool, ctx context.Context, command string) sandbox.Result {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": command})
	raw, err := bash.Call(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	var res sandbox.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestNoNetworkByDefault: in every mode with its default network, nothing a command
// can run reaches a listener on the machine's loopback (where turnlog's API listens).
func TestNoNetworkByDefault(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	accepted := 0
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted++
			mu.Unlock()
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	attacks := fmt.Sprintf(`curl -sf -m 3 http://127.0.0.1:%[1]d/ && echo CONNECTED
(echo hi > /dev/tcp/127.0.0.1/%[1]d) 2>/dev/null && echo CONNECTED
python3 -c 'import socket; socket.create_connection(("127.0.0.1", %[1]d), 3); print("CONNECTED")' 2>/dev/null
git ls-remote http://127.0.0.1:%[1]d/x.git >/dev/null 2>&1 && echo CONNECTED
timeout 3 openssl s_client -connect 127.0.0.1:%[1]d </dev/null >/dev/null 2>&1 && echo CONNECTED
true`, port)
	for _, mode := range policy.Modes {
		b := setup(t)
		ws := openWorkspace(t, b.dir)
		access := &policy.Engine{Mode: mode, Workspace: b.dir, Mechanism: testMechanism(t)}
		res := bashResult(t, workspacetools.Bash(workspacetools.SpecFor(ws, access), access, nil), context.Background(), attacks)
		if strings.Contains(res.Stdout, "CONNECTED") {
			t.Errorf("%s: a command reached the host's loopback: %+v", mode, res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted > 0 {
		t.Fatalf("the loopback listener accepted %d connections", accepted)
	}
}

// TestAddressesPassOnlyWhenNamed: behind the proxy, a pattern matches names only —
// `*` opens no address written out (loopback, unspecified, IPv4-mapped, metadata) —,
// an address passes only with a rule naming it, and turnlog's own listener never
// does. Nothing refused is dialled.
func TestAddressesPassOnlyWhenNamed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "reached "+r.Host) }))
	defer srv.Close()
	var mu sync.Mutex
	var dialed []string
	b := setup(t)
	ws := openWorkspace(t, b.dir)
	access := &policy.Engine{Mode: policy.ModeNetworkAllowlist, Workspace: b.dir, Mechanism: testMechanism(t), Rules: []policy.Rule{
		{Name: "anything", Decision: policy.Allow, Domains: []string{"*"}},
		{Name: "these-addresses", Decision: policy.Allow, Domains: []string{"127.0.0.7", "127.0.0.8"}},
	}}
	spec := workspacetools.SpecFor(ws, access, "127.0.0.8:80")
	spec.Resolve = func(_ context.Context, host string) ([]net.IP, error) {
		if host == "metadata.test" { // a cloud's metadata service, in shared address space
			return []net.IP{net.ParseIP("100.100.100.200")}, nil
		}
		return nil, fmt.Errorf("no resolver in this test")
	}
	spec.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialed = append(dialed, addr)
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	bash := workspacetools.Bash(spec, access, nil)
	res := bashResult(t, bash, context.Background(), `for u in http://127.0.0.1/ http://0.0.0.0/ http://[::ffff:127.0.0.1]/ http://169.254.169.254/latest/meta-data/ http://[::1]/ http://127.0.0.8/ http://127.0.0.8:0080/ http://metadata.test/; do curl -s -m 5 $u; echo; done
curl -s -m 5 -p https://127.0.0.1/ -o /dev/null -w '%{http_code}\n'
curl -s -m 5 http://127.0.0.7/; echo
# The port spelled another way, which curl would normalise: written to the proxy by hand.
exec 3<>/dev/tcp/127.0.0.1/${HTTP_PROXY##*:}; printf 'GET http://127.0.0.8:0080/ HTTP/1.1\r\nHost: 127.0.0.8:0080\r\n\r\n' >&3; timeout 5 cat <&3; echo`)
	for _, host := range []string{"127.0.0.1", "0.0.0.0", "::ffff:127.0.0.1", "169.254.169.254", "::1"} {
		if !strings.Contains(res.Stdout, "network to "+host+" denied: no rule allows the network to "+host) {
			t.Errorf("%s was not refused: %+v", host, res)
		}
	}
	if strings.Count(res.Stdout, "127.0.0.8:80 is turnlog's own") != 3 {
		t.Errorf("turnlog's own listener was not refused, under each spelling of its port: %+v", res)
	}
	if !strings.Contains(res.Stdout, "metadata.test resolves to 100.100.100.200") {
		t.Errorf("a name resolving to shared address space was not refused: %+v", res)
	}
	if !strings.Contains(res.Stdout, "reached 127.0.0.7") {
		t.Errorf("the address a rule names was not reached: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(dialed, " ") != "127.0.0.7:80" {
		t.Fatalf("the proxy dialled %v", dialed)
	}
}

// TestApprovedNetworkCallGetsTheProxy: where the network is off, a network command a
// person approved runs behind the proxy opened to the hosts the app allows — what the
// approval prompt says — while the same command unapproved has no network at all.
func TestApprovedNetworkCallGetsTheProxy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "packages") }))
	defer srv.Close()
	b := setup(t)
	ws := openWorkspace(t, b.dir)
	access := &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: b.dir, Mechanism: testMechanism(t), Rules: []policy.Rule{
		{Name: "registry", Decision: policy.Allow, Domains: []string{"registry.npmjs.org"}},
	}}
	v := access.Shell(policy.Subject{Agent: "coder", Tool: "bash"}, "npm install left-pad")
	if v.Decision != policy.RequireApproval || !strings.Contains(v.Reason, "open only to registry.npmjs.org") {
		t.Fatalf("the prompt does not say what approving grants: %+v", v)
	}
	spec := workspacetools.SpecFor(ws, access)
	spec.Resolve = func(context.Context, string) ([]net.IP, error) { return []net.IP{net.ParseIP("104.16.0.35")}, nil }
	spec.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	bash := workspacetools.Bash(spec, access, nil)
	cmd := "curl -s -m 5 http://registry.npmjs.org/left-pad; echo; curl -s -m 5 http://evil.test/; echo"
	approved := bashResult(t, bash, fsm.WithCallInfo(context.Background(), fsm.CallInfo{Agent: "coder", Approved: true}), cmd)
	if !strings.HasPrefix(approved.Stdout, "packages\n") || !strings.Contains(approved.Stdout, "network to evil.test denied") {
		t.Fatalf("approved: %+v", approved)
	}
	unapproved := bashResult(t, bash, fsm.WithCallInfo(context.Background(), fsm.CallInfo{Agent: "coder"}), cmd)
	if strings.Contains(unapproved.Stdout, "packages") || len(unapproved.Network) != 0 {
		t.Fatalf("unapproved: %+v", unapproved)
	}
}
