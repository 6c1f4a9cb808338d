package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Permissions is the section an agent's requests carry so that its model knows the
// rules before it acts: the mode, the network, the workspace, what asks a person and
// what is refused — read from the same decisions the engine makes, for this agent's
// rules. It names no path of the machine (the workspace may be a user's own), so it
// is the same for every session of the agent.
func (e *Engine) Permissions(agent string) string {
	var b strings.Builder
	b.WriteString("## Tools and permissions\n\n")
	b.WriteString("Your shell and file tools work in the workspace (the directory your commands start in), inside a sandbox.\n")
	write := e.levelDefault(Command{Level: L2, Actions: []Action{ActWrite}})
	del := e.levelDefault(Command{Level: L4, Actions: []Action{ActDelete}})
	push := e.levelDefault(Command{Level: L4, Actions: []Action{ActNetwork}})
	net := e.levelDefault(Command{Level: L3, Actions: []Action{ActNetwork}})
	if e.EffectiveNetwork() == NetworkOff && net == RequireApproval {
		net = Allow // said above: it cannot reach anything, whoever approves it
	}
	opaque := e.modeDefault(Command{Level: L2, Actions: []Action{ActExecute}, Class: ClassOpaque})
	mode := e.EffectiveMode()
	switch write {
	case Allow:
		fmt.Fprintf(&b, "- Mode %s: you may read, create, change and delete files in the workspace; every change is recorded and can be taken back.\n", mode)
	default:
		fmt.Fprintf(&b, "- Mode %s: you may read files in the workspace; nothing may be written, created or deleted.\n", mode)
	}
	switch e.EffectiveNetwork() {
	case NetworkOff:
		b.WriteString("- Network: off. Commands cannot reach the network: no downloads, package installs, git fetch or push.\n")
	case NetworkAllowlist:
		if hosts := e.allowedHosts(agent); len(hosts) > 0 {
			fmt.Fprintf(&b, "- Network: only through a proxy, to %s; any other host fails.\n", strings.Join(hosts, ", "))
		} else {
			b.WriteString("- Network: through a proxy that no host is allowed through; reaching the network fails.\n")
		}
	case NetworkHost:
		b.WriteString("- Network: commands reach the network.\n")
	}
	var asks, refused []string
	sort := func(d Decision, what string) {
		switch d {
		case RequireApproval:
			asks = append(asks, what)
		case Deny:
			refused = append(refused, what)
		}
	}
	sort(del, "deleting or overwriting files (rm, git reset --hard, git checkout -- .)")
	sort(push, "pushing and publishing (git push, npm publish)")
	sort(net, "reaching the network (curl, package installs, git fetch)")
	sort(opaque, "running what the policy cannot read: scripts, builds, test runners, interpreters given code, programs it does not know")
	if write != Allow {
		refused = append(refused, "writing any file")
	}
	refused = append(refused, "anything outside the workspace", "secrets (.env files, keys, .ssh, git credentials, .git/config and .git/hooks)",
		"system changes (sudo, mount, changing users or devices)")
	if opaque == Allow {
		b.WriteString("- Builds, tests and scripts run without asking; what they change stays in the workspace and can be taken back.\n")
	}
	asks = append(asks, e.ruleLines(agent, RequireApproval)...)
	refused = append(refused, e.ruleLines(agent, Deny)...)
	if len(asks) > 0 {
		b.WriteString("- A person is asked before: " + strings.Join(asks, "; ") + ". Ask only when you need it; the turn waits for the answer.\n")
	}
	b.WriteString("- Refused, whoever asks: " + strings.Join(refused, "; ") + ".\n")
	b.WriteString("A refused call's result names the rule and, where there is one, what to do instead: do that, or tell the user what you need. Do not try the same thing spelled another way.")
	return b.String()
}

// allowedHosts are the hosts the agent's allow rules open through the proxy.
func (e *Engine) allowedHosts(agent string) []string {
	var hosts []string
	for _, r := range e.Rules {
		if r.Decision == Allow && anyOf(r.Agents, agent) {
			for _, d := range r.Domains {
				if !slices.Contains(hosts, d) {
					hosts = append(hosts, d)
				}
			}
		}
	}
	return hosts
}

// ruleLines names the agent's rules that decide d: what each matches, and its
// alternative.
func (e *Engine) ruleLines(agent string, d Decision) []string {
	var out []string
	for _, r := range e.Rules {
		if r.Decision != d || !anyOf(r.Agents, agent) {
			continue
		}
		var what []string
		for _, c := range r.Commands {
			what = append(what, "`"+c+"`")
		}
		what = append(what, r.Paths...)
		what = append(what, r.Domains...)
		for _, a := range r.Actions {
			what = append(what, string(a))
		}
		if len(r.Tools) > 0 {
			what = append(what, "tools "+strings.Join(r.Tools, ", "))
		}
		line := r.Name
		if len(what) > 0 {
			line += " (" + strings.Join(what, ", ") + ")"
		}
		if len(r.Skills) > 0 {
			line += " under the skills " + strings.Join(r.Skills, ", ")
		}
		if r.Alternative != "" {
			line += " — instead: " + r.Alternative
		}
		out = append(out, line)
	}
	return out
}
