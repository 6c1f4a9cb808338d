package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/policy"
)

// ExitStatus ends a command with a chosen exit status after it printed its result.
type ExitStatus int

func (e ExitStatus) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// ExitSuspended is the exit status of a command whose turn waits for a person (it
// printed the questions): answer them with turnlog resume.
const ExitSuspended = ExitStatus(5)

// Exit statuses of `turnlog policy check`.
const (
	exitAllow           = 0
	exitRequireApproval = 3
	exitDeny            = 4
)

// cmdPolicy runs `turnlog policy check`: the decision the app's policy gives a shell
// command (or another tool's call), every command found in it, and the rule that
// fired. Exit status 0 allow, 3 require_approval, 4 deny.
func cmdPolicy(ctx context.Context, c *cliContext, args []string) error {
	if len(args) == 0 || args[0] != "check" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			newFlagSet(c, "policy", nil, false).Usage()
			return nil
		}
		return events.Errorf(events.CodeInvalid, "usage: turnlog %s", commands()["policy"].usage)
	}
	var f commonFlags
	fs := newFlagSet(c, "policy", &f, true)
	app := fs.String("app", envOr("TURNLOG_APP", "demo"), "app whose policy decides (env TURNLOG_APP)")
	agent := fs.String("agent", "", "the calling agent (default: the app's start agent)")
	tool := fs.String("tool", "bash", "the tool called; bash takes the command after --")
	toolArgs := fs.String("args", "", "the tool call's arguments as JSON (for a tool other than bash)")
	workspace := fs.String("workspace", envOr("TURNLOG_WORKSPACE", "."), "the workspace paths are resolved against (env TURNLOG_WORKSPACE)")
	asJSON := fs.Bool("json", false, "print the verdict as JSON")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	apps, err := c.loadApps(ctx, f.config)
	if err != nil {
		return err
	}
	var engine *policy.Engine
	start, found := "", false
	for _, a := range apps {
		if a.Name == *app {
			engine, start, found = a.ToolPolicy, a.StartAgent, true
		}
	}
	if !found {
		return events.FieldError(events.CodeInvalid, "app", "names no app of the config (%q)", *app)
	}
	if engine == nil { // no policy section: the default mode's decisions
		engine = &policy.Engine{}
	}
	ws, err := filepath.Abs(*workspace)
	if err != nil {
		return events.FieldError(events.CodeInvalid, "workspace", "%v", err)
	}
	e := *engine
	e.Workspace = ws
	if *agent == "" {
		*agent = start
	}
	sub := policy.Subject{Agent: *agent, Tool: *tool}
	var v policy.Verdict
	switch {
	case *tool == "bash":
		command := strings.Join(fs.Args(), " ")
		if *toolArgs != "" {
			command = gjson.Get(*toolArgs, "command").String()
		}
		if strings.TrimSpace(command) == "" {
			return events.FieldError(events.CodeInvalid, "command", "give the command after -- (or --args '{\"command\": ...}')")
		}
		v = e.Shell(sub, command)
	default:
		if *toolArgs != "" && !json.Valid([]byte(*toolArgs)) {
			return events.FieldError(events.CodeInvalid, "args", "is not JSON")
		}
		v = e.Tool(sub, policy.L2, []policy.Action{policy.ActExecute}, nil)
	}
	if *asJSON {
		out, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintln(c.stdout, string(out))
	} else {
		printVerdict(c, v)
	}
	switch v.Decision {
	case policy.Deny:
		return ExitStatus(exitDeny)
	case policy.RequireApproval:
		return ExitStatus(exitRequireApproval)
	}
	return nil
}

func printVerdict(c *cliContext, v policy.Verdict) {
	fmt.Fprintf(c.stdout, "decision: %s\nlevel:    %s\nrule:     %s\nreason:   %s\n", v.Decision, v.Level, v.Rule, v.Reason)
	if v.Alternative != "" {
		fmt.Fprintf(c.stdout, "instead:  %s\n", v.Alternative)
	}
	if len(v.Commands) == 0 {
		return
	}
	fmt.Fprintln(c.stdout, "commands:")
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	for _, cv := range v.Commands {
		via := ""
		if len(cv.Via) > 0 {
			via = " (via " + strings.Join(cv.Via, ", ") + ")"
		}
		fmt.Fprintf(tw, "  %s%s\t%s\t%s\t%s\t%s\n", strings.Join(cv.Argv, " "), via, cv.Class, cv.Level, cv.Decision, cv.Rule)
	}
	tw.Flush()
}
