package policy

import "fmt"

// Host decides whether a running command may reach host (a name or an address, no
// port) through the sandbox's network proxy. Only an explicit allow rule lets a host
// through: a command cannot stop to ask for approval mid-flight, so a rule asking for
// one refuses, and so does a host no rule names.
func (e *Engine) Host(sub Subject, host string) Verdict {
	c := Command{Argv: []string{"connect", host}, Level: L3, Actions: []Action{ActNetwork},
		Resources: []Resource{{Action: ActNetwork, Domain: host}}}
	var best *Rule
	for i := range e.Rules {
		r := &e.Rules[i]
		if len(r.Domains) == 0 || !r.matches(e, sub, c) {
			continue
		}
		if best == nil || strictness(r.Decision) > strictness(best.Decision) {
			best = r
		}
	}
	v := Verdict{Decision: Deny, Level: L3, Resources: c.Resources}
	switch {
	case best == nil:
		v.Rule, v.Reason = "default:"+string(e.EffectiveMode()), fmt.Sprintf("no rule allows the network to %s", host)
	case best.Decision == Allow:
		v.Decision, v.Rule, v.Reason = Allow, best.Name, fmt.Sprintf("rule %s allows %s", best.Name, host)
	default:
		v.Rule, v.Alternative = best.Name, best.Alternative
		v.Reason = fmt.Sprintf("rule %s says %s for %s, and a running command cannot wait for approval", best.Name, best.Decision, host)
		if best.Decision == Deny {
			v.Reason = fmt.Sprintf("rule %s denies %s", best.Name, host)
		}
	}
	return v
}
