package policy

import (
	"strings"
	"testing"
)

func TestAGrantAllowsOnlyWhatItsPatternNamesAndNeverWhatIsDenied(t *testing.T) {
	e := &Engine{Mode: ModeNetworkAllowlist, Workspace: "/w",
		Rules: []Rule{{Name: "no-push-main", Decision: Deny, Commands: []string{"git push origin main"}}}}
	sub := Subject{Agent: "coder", Tool: "bash"}
	push := Grant{ID: "g1", Agent: "coder", Tool: "bash", Command: []string{"git", "push"}, By: "alice"}
	tests := []struct {
		command string
		want    Decision
	}{
		{"git push origin fix/x", Allow},
		{"timeout 60 git push origin fix/x", Allow},
		{"chronic git push origin fix/x", RequireApproval},      // an unknown wrapper asks for itself
		{"git push origin main", Deny},                          // a rule denies it: no grant opens it
		{"git push origin fix/x && make test", RequireApproval}, // make is left uncovered
		{"git pull origin main", RequireApproval},
		{"git push origin x; cat .env", Deny}, // the deny list wins
		{"npm publish", RequireApproval},
	}
	for _, tc := range tests {
		v := e.Shell(sub, tc.command)
		got, used := Granted(v, sub, []Grant{push})
		if got.Decision != tc.want {
			t.Errorf("%q: %s (%s), want %s", tc.command, got.Decision, got.Rule, tc.want)
		}
		if tc.want == Allow && (len(used) != 1 || got.Rule != "grant:g1" || !strings.Contains(got.Reason, `alice allowed "git push"`)) {
			t.Errorf("%q: used %v, rule %s, reason %s", tc.command, used, got.Rule, got.Reason)
		}
	}
	other := Subject{Agent: "reviewer", Tool: "bash"}
	if got, _ := Granted(e.Shell(other, "git push origin x"), other, []Grant{push}); got.Decision != RequireApproval {
		t.Errorf("another agent's call took the grant: %s", got.Decision)
	}
}

func TestAGrantsPrefixIsLiteralAndAToolGrantNamesTheTool(t *testing.T) {
	g := Grant{ID: "g", Agent: "a", Tool: "bash", Prefix: "npm run test"}
	for argv, want := range map[string]bool{"npm run test": true, "npm run test:unit": true, "npm run lint": false, "/usr/bin/npm run test": true} {
		if got := g.Covers(strings.Fields(argv)); got != want {
			t.Errorf("prefix covers %q = %v", argv, got)
		}
	}
	e := &Engine{Mode: ModeWorkspaceWrite, Workspace: "/w"}
	sub := Subject{Agent: "a", Tool: "fetch_url"}
	v := e.Tool(sub, L3, []Action{ActNetwork}, []Resource{{Action: ActNetwork, Domain: "example.com"}})
	if v.Decision != RequireApproval {
		t.Fatalf("the network tool does not ask: %s", v.Decision)
	}
	tool := Grant{ID: "t", Agent: "a", Tool: "fetch_url", Command: []string{"fetch_url"}}
	if got, _ := Granted(v, sub, []Grant{tool}); got.Decision != Allow {
		t.Errorf("a tool grant does not cover its tool: %s", got.Decision)
	}
}

func TestAGrantPatternNamesLiteralWords(t *testing.T) {
	for _, bad := range [][2]string{{"", ""}, {"  ", ""}, {"git *", ""}, {"git push", "git"}, {"", "  "}} {
		if CheckGrantPattern(bad[0], bad[1]) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := strings.Join(SuggestGrant([]string{"/usr/bin/git", "push", "origin"}), " "); got != "git push" {
		t.Errorf("suggested %q", got)
	}
	if got := strings.Join(SuggestGrant([]string{"curl", "https://x.example/a"}), " "); got != "curl" {
		t.Errorf("suggested %q", got)
	}
}

func TestAChangedPolicyHasAnotherFingerprint(t *testing.T) {
	a := &Engine{Mode: ModeNetworkAllowlist, Rules: []Rule{{Name: "r", Decision: Allow, Domains: []string{"x.example"}}}}
	b := &Engine{Mode: ModeNetworkAllowlist, Rules: []Rule{{Name: "r", Decision: Allow, Domains: []string{"x.example"}}}, Workspace: "/elsewhere"}
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("the workspace's place changed the fingerprint")
	}
	for _, c := range []*Engine{{Mode: ModeNetworkOff, Rules: a.Rules}, {Mode: ModeNetworkAllowlist}, {Mode: ModeNetworkAllowlist, Rules: a.Rules, Network: NetworkHost}} {
		if c.Fingerprint() == a.Fingerprint() {
			t.Errorf("%+v has the same fingerprint", c)
		}
	}
}
