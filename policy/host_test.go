package policy_test

import (
	"testing"

	"github.com/turnlog/turnlog/policy"
)

// TestHostsNeedAnAllowRule: the sandbox's proxy lets a command reach only hosts an
// allow rule names; a stricter rule wins, approval cannot be given mid-command, and
// rules for other agents do not apply.
func TestHostsNeedAnAllowRule(t *testing.T) {
	e := &policy.Engine{Mode: policy.ModeNetworkAllowlist, Rules: []policy.Rule{
		{Name: "go-modules", Decision: policy.Allow, Domains: []string{"proxy.golang.org", "*.golang.org"}},
		{Name: "github", Decision: policy.Allow, Actions: []policy.Action{policy.ActNetwork}, Domains: []string{"github.com", "**.github.com"}},
		{Name: "no-gist", Decision: policy.Deny, Domains: []string{"gist.github.com"}},
		{Name: "ask-pypi", Decision: policy.RequireApproval, Domains: []string{"pypi.org"}},
		{Name: "intern-only", Decision: policy.Allow, Agents: []string{"intern"}, Domains: []string{"example.com"}},
		{Name: "curl-needs-approval", Decision: policy.RequireApproval, Actions: []policy.Action{policy.ActNetwork}},
	}}
	for _, c := range []struct {
		agent, host string
		want        policy.Decision
		rule        string
	}{
		{"coder", "proxy.golang.org", policy.Allow, "go-modules"},
		{"coder", "sum.golang.org", policy.Allow, "go-modules"},
		{"coder", "golang.org.evil.com", policy.Deny, "default:network-allowlist"},
		{"coder", "api.github.com", policy.Allow, "github"},
		{"coder", "gist.github.com", policy.Deny, "no-gist"},
		{"coder", "pypi.org", policy.Deny, "ask-pypi"},
		{"coder", "example.com", policy.Deny, "default:network-allowlist"},
		{"intern", "example.com", policy.Allow, "intern-only"},
		{"coder", "127.0.0.1", policy.Deny, "default:network-allowlist"},
	} {
		v := e.Host(policy.Subject{Agent: c.agent, Tool: "bash"}, c.host)
		if v.Decision != c.want || v.Rule != c.rule {
			t.Errorf("%s → %s: %s by %s (%s), want %s by %s", c.agent, c.host, v.Decision, v.Rule, v.Reason, c.want, c.rule)
		}
	}
}
