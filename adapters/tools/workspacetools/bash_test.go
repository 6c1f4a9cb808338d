package workspacetools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// TestAllowlistModeReachesOnlyAllowedHosts: in network-allowlist mode the bash tool's
// commands reach a host only when an allow rule names it for the calling agent; the
// result lists each host asked for, with the rule's reason when refused.
func TestAllowlistModeReachesOnlyAllowedHosts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "module list") }))
	defer srv.Close()
	b := setup(t)
	ws := openWorkspace(t, b.dir)
	access := &policy.Engine{Mode: policy.ModeNetworkAllowlist, Workspace: b.dir, Mechanism: testMechanism(t), Rules: []policy.Rule{
		{Name: "go-proxy", Decision: policy.Allow, Agents: []string{"coder"}, Domains: []string{"proxy.golang.org"}},
	}}
	spec := workspacetools.SpecFor(ws, access)
	spec.Resolve = func(context.Context, string) ([]net.IP, error) { return []net.IP{net.ParseIP("142.250.0.1")}, nil }
	spec.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	bash := workspacetools.Bash(spec, access, nil)
	for _, c := range []struct {
		agent, want string
		allowed     bool
	}{
		{"coder", "module list", true},
		{"reviewer", "network to proxy.golang.org denied: no rule allows the network to proxy.golang.org", false},
	} {
		ctx := fsm.WithCallInfo(context.Background(), fsm.CallInfo{Session: "s0", Agent: c.agent})
		raw, err := bash.Call(ctx, json.RawMessage(`{"command":"curl -s -m 5 http://proxy.golang.org/golang.org/x/sys/@v/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		var res sandbox.Result
		json.Unmarshal(raw, &res)
		if !strings.Contains(res.Stdout, c.want) || len(res.Network) != 1 || res.Network[0].Allowed != c.allowed {
			t.Errorf("%s: %+v", c.agent, res)
		}
	}
}
