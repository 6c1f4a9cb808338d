package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/turnlog/turnlog/pkg/turnlog"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// cmdDoctor prints which sandbox mechanisms work on this machine and the mode each
// configured app gets.
func cmdDoctor(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "doctor", &f, true)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	checks := sandbox.Doctor(ctx)
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	works := map[string]bool{}
	for _, ch := range checks {
		status := "works"
		if !ch.Works {
			status = "missing"
		}
		works[ch.Mechanism] = ch.Works
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Mechanism, status, ch.Detail)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\n", "helper", "works", sandbox.HelperInUse())
	tw.Flush()
	loaded, err := turnlog.LoadApps(ctx, c.options(f.config, commonFlags{}))
	if err != nil {
		return err
	}
	c.closers = append(c.closers, loaded.Close)
	fmt.Fprintln(c.stdout, "\napps:")
	for _, a := range loaded.List {
		if a.ToolPolicy == nil {
			fmt.Fprintf(c.stdout, "  %s: no policy section (no built-in tools)\n", a.Name)
			continue
		}
		mode, network := a.ToolPolicy.EffectiveMode(), a.ToolPolicy.EffectiveNetwork()
		var missing []string
		for _, m := range mechanismsFor(network, a.ToolPolicy.Mechanism) {
			if !works[m] {
				missing = append(missing, m)
			}
		}
		what := fmt.Sprintf("mode %s, network %s%s", mode, network, sandboxName(a.ToolPolicy.Mechanism))
		if len(missing) > 0 {
			fmt.Fprintf(c.stdout, "  %s: %s — bash calls will fail closed here (missing: %s)\n", a.Name, what, strings.Join(missing, ", "))
		} else {
			fmt.Fprintf(c.stdout, "  %s: %s — available\n", a.Name, what)
		}
		if network == policy.NetworkHost {
			fmt.Fprintf(c.stdout, "    WARNING: commands reach the machine's network, loopback included (refused with serve --dev)\n")
		}
	}
	warnCommittedSecrets(ctx, loaded, func(line string) { fmt.Fprintln(c.stdout, "  WARNING: "+line) })
	return nil
}

// committedSecrets is what can list the workspaces whose git history holds masked
// files (the apps of a config, or an open turnlog).
type committedSecrets interface {
	CommittedSecrets(ctx context.Context) ([]turnlog.CommittedSecret, error)
}

// warnCommittedSecrets says, a line each, which workspaces' git history holds
// files the default-deny list masks, and what that means.
func warnCommittedSecrets(ctx context.Context, apps committedSecrets, say func(string)) {
	found, err := apps.CommittedSecrets(ctx)
	for _, f := range found {
		say(fmt.Sprintf("app %s: the git history of %s holds %s, which the default-deny list masks: any command the policy allows can read them through git's objects (git show); rewrite the history to take them out (docs/security.md)",
			f.App, f.Workspace, strings.Join(f.Files, ", ")))
	}
	if err != nil {
		say("could not read every workspace's git history for masked files: " + err.Error())
	}
}

// mechanismsFor lists what commands need, given their network and mechanism.
func mechanismsFor(network policy.Network, mechanism string) []string {
	need := []string{sandbox.MechLandlock, sandbox.MechProcessLimit, sandbox.MechUnprivileged, sandbox.MechSeccomp, sandbox.MechCgroup}
	if mechanism == sandbox.MechanismBubblewrap {
		need[0] = sandbox.MechBubblewrap
	}
	switch network {
	case policy.NetworkHost:
		return append(need, sandbox.MechHostNetwork)
	case policy.NetworkAllowlist:
		return append(need, sandbox.MechProxy)
	}
	return append(need, sandbox.MechNoNetwork)
}

func sandboxName(mechanism string) string {
	if mechanism == "" {
		return ""
	}
	return ", sandbox " + mechanism
}
