package policy

import (
	"strings"
	"testing"
)

// TestThePermissionsSayWhatTheEngineDecides: in every mode and network, what the
// section says asks and what it says is refused is what the engine decides about a
// command of each kind; the agent's own rules are named with their alternatives.
func TestThePermissionsSayWhatTheEngineDecides(t *testing.T) {
	rules := []Rule{{Name: "no-push-main", Decision: Deny, Commands: []string{"git push origin main"}, Alternative: "push a branch"},
		{Name: "github", Decision: Allow, Domains: []string{"github.com"}},
		{Name: "reviewer-only", Decision: Deny, Agents: []string{"reviewer"}, Commands: []string{"go"}}}
	kinds := map[string]string{
		"rm -rf build":              "deleting or overwriting files",
		"git push origin fix/x":     "pushing and publishing",
		"curl -s https://gitlab.io": "reaching the network",
		"make test":                 "running what the policy cannot read",
		"cp a b":                    "writing any file",
	}
	for _, m := range Modes {
		for _, n := range []Network{"", NetworkHost} {
			e := &Engine{Mode: m, Network: n, Workspace: "/w", Rules: rules}
			text := e.Permissions("coder")
			asks, refused := line(text, "- A person is asked before: "), line(text, "- Refused, whoever asks: ")
			for cmd, phrase := range kinds {
				v := e.Shell(Subject{Agent: "coder", Tool: "bash"}, cmd)
				inAsks, inRefused := strings.Contains(asks, phrase), strings.Contains(refused, phrase)
				ok := true
				switch v.Decision {
				case Deny:
					ok = inRefused && !inAsks
				case RequireApproval:
					offline := e.EffectiveNetwork() == NetworkOff && phrase == "reaching the network"
					ok = (inAsks || offline) && !inRefused
				case Allow:
					ok = !inAsks && !inRefused
				}
				if !ok {
					t.Errorf("%s network %q: %q is %s, and the section says\n%s", m, e.EffectiveNetwork(), cmd, v.Decision, text)
				}
			}
			if !strings.Contains(refused, "no-push-main (`git push origin main`) — instead: push a branch") || strings.Contains(text, "reviewer-only") {
				t.Errorf("%s: the agent's rules are not named as they apply:\n%s", m, text)
			}
			if strings.Contains(text, "/w") {
				t.Errorf("%s: the section names the workspace's path:\n%s", m, text)
			}
		}
	}
}

func line(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
