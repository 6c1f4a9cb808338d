package policy

import (
	"net/netip"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Network is how commands reach the network — an axis of its own beside the mode.
type Network string

const (
	// NetworkOff: a network namespace with nothing in it (the default of every mode
	// but network-allowlist).
	NetworkOff Network = "off"
	// NetworkAllowlist: the only way out is turnlog's proxy, which lets through the
	// hosts an allow rule names (the default of network-allowlist).
	NetworkAllowlist Network = "allowlist"
	// NetworkHost: the machine's own network, loopback included — only when the
	// config says so, with a warning.
	NetworkHost Network = "host"
)

// Networks lists the settings.
var Networks = []Network{NetworkOff, NetworkAllowlist, NetworkHost}

// EffectiveNetwork is the engine's network: the configured one, else what the mode
// implies (allowlist for network-allowlist, off for every other mode).
func (e *Engine) EffectiveNetwork() Network {
	switch {
	case e.Network != "":
		return e.Network
	case e.EffectiveMode() == ModeNetworkAllowlist:
		return NetworkAllowlist
	}
	return NetworkOff
}

// hostAddress is host as an address when it is one written out (1.2.3.4, ::1,
// [::ffff:127.0.0.1]), in its IPv4 form when it is an IPv4-mapped one.
func hostAddress(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

// domainMatches says whether a rule's domain pattern covers host. Patterns match
// names only: an address is covered only by a pattern that is that same address, so
// that `*` or `*.example.com` never opens 127.0.0.1, 0.0.0.0, ::ffff:10.0.0.1 or a
// metadata address.
func domainMatches(pattern, host string) bool {
	if host == "" {
		return false
	}
	if addr, ok := hostAddress(host); ok {
		named, ok := hostAddress(pattern)
		return ok && named == addr
	}
	m, _ := doublestar.Match(strings.ToLower(pattern), strings.ToLower(strings.TrimSuffix(host, ".")))
	return m
}

// NetworkGrant says what approving a network command grants the subject, so that an
// approval never silently does nothing: the call runs behind turnlog's proxy, which
// lets through only the hosts the app's allow rules name for it (with the network off,
// for that one call), or with the machine's network.
func (e *Engine) NetworkGrant(sub Subject) string {
	if e.EffectiveNetwork() == NetworkHost {
		return "approving runs it with the machine's network"
	}
	var hosts []string
	for _, r := range e.Rules {
		if r.Decision == Allow && len(r.Domains) > 0 && anyOf(r.Agents, sub.Agent) && anyOf(r.Skills, sub.Skill) {
			hosts = append(hosts, r.Domains...)
		}
	}
	if len(hosts) == 0 {
		return "approving runs it without network: no rule of this app allows a host"
	}
	return "approving runs this call behind turnlog's network proxy, open only to " + strings.Join(hosts, ", ")
}
