package main

import (
	"context"
	"fmt"
	"text/tabwriter"

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
	core := works["landlock"] && works["pid+net namespaces (network-off modes)"] && works["pid namespace (workspace-write)"]
	fmt.Fprintln(c.stdout, "\napps:")
	for _, a := range apps {
		switch {
		case a.Access == nil:
			fmt.Fprintf(c.stdout, "  %s: no policy section (no built-in tools)\n", a.Name)
		case !core:
			fmt.Fprintf(c.stdout, "  %s: mode %s — bash calls will fail closed here (a mechanism is missing)\n", a.Name, a.Access.EffectiveMode())
		default:
			fmt.Fprintf(c.stdout, "  %s: mode %s — available\n", a.Name, a.Access.EffectiveMode())
		}
	}
	return nil
}
