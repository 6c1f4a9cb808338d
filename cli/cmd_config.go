package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// cmdConfig runs `turnlog config schema` (agent.yaml's JSON Schema), `config
// reference` (docs/config.md's reference, written from it) and `config check FILE...`
// (every problem of each file, with its line: the schema's, then what the loader
// checks as serve would, MCP servers reached included).
func cmdConfig(ctx context.Context, c *cliContext, args []string) error {
	usage := events.Errorf(events.CodeInvalid, "usage: turnlog %s", commands()["config"].usage)
	if len(args) == 0 {
		return usage
	}
	switch args[0] {
	case "-h", "--help":
		newFlagSet(c, "config", nil, false).Usage()
		return nil
	case "schema":
		if len(args) != 1 {
			return usage
		}
		_, err := c.stdout.Write(turnlog.ConfigSchema)
		return err
	case "reference":
		if len(args) != 1 {
			return usage
		}
		ref, err := turnlog.ConfigReference()
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(c.stdout, ref)
		return err
	case "check":
		fs := newFlagSet(c, "config", nil, false)
		if err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return usage
		}
		return c.checkConfigs(ctx, fs.Args())
	}
	return usage
}

// checkConfigs loads each file as serve would and prints every problem on a line of
// its own, or that the file is fine. Exit status 1 when any file has a problem.
func (c *cliContext) checkConfigs(ctx context.Context, files []string) error {
	bad := 0
	for _, file := range files {
		apps, err := turnlog.LoadApps(ctx, c.options(file, commonFlags{}))
		if err == nil {
			fmt.Fprintf(c.stdout, "%s: ok (%d apps)\n", file, len(apps.List))
			apps.Close()
			continue
		}
		bad++
		var es turnlog.ConfigErrors
		var one *turnlog.ConfigError
		switch {
		case errors.As(err, &es):
			for _, e := range es {
				fmt.Fprintln(c.stdout, e)
			}
		case errors.As(err, &one):
			fmt.Fprintln(c.stdout, one)
		default:
			fmt.Fprintf(c.stdout, "%s: %v\n", file, err)
		}
	}
	if bad > 0 {
		return ExitStatus(1)
	}
	return nil
}
