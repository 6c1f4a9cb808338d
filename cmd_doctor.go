package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// cmdDoctor prints which sandbox mechanisms work on this machine and the mode each
// configured app gets.
func cmdDoctor(ctx context.Context, c *cliContext, args []string) error {
	var f commonFlags
	fs := newFlagSet(c, "doctor", &f, true)
	if err := fs.Parse(args); err != nil {
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
	tw.Flush()
	apps, err := c.loadApps(f.config)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "\napps:")
	for _, a := range apps {
		if a.Access == nil {
			fmt.Fprintf(c.stdout, "  %s: no policy section (no built-in tools)\n", a.Name)
			continue
		}
		mode := a.Access.EffectiveMode()
		var missing []string
		for _, m := range mechanismsFor(mode, a.Access.Mechanism) {
			if !works[m] {
				missing = append(missing, m)
			}
		}
		if len(missing) > 0 {
			fmt.Fprintf(c.stdout, "  %s: mode %s%s — bash calls will fail closed here (missing: %s)\n", a.Name, mode, sandboxName(a.Access.Mechanism), strings.Join(missing, ", "))
		} else {
			fmt.Fprintf(c.stdout, "  %s: mode %s%s — available\n", a.Name, mode, sandboxName(a.Access.Mechanism))
		}
	}
	return nil
}

// mechanismsFor lists what a mode's commands need, confined by mechanism.
func mechanismsFor(mode policy.Mode, mechanism string) []string {
	need := []string{sandbox.MechLandlock, sandbox.MechProcessLimit}
	if mechanism == sandbox.MechanismBubblewrap {
		need = []string{sandbox.MechBubblewrap, sandbox.MechProcessLimit}
	}
	switch mode {
	case policy.ModeWorkspaceWrite:
		return append(need, sandbox.MechPIDNamespace)
	case policy.ModeNetworkAllowlist:
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
