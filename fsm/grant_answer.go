package fsm

import (
	"slices"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/policy"
)

// GrantAnswer, given with a tool approval's yes, says yes for the rest of the
// session to the commands a pattern names: Command, an argv prefix ("git push"), or
// Prefix, a literal prefix of a command's words ("npm run test"). Neither: the
// program and subcommand of the call's first command that asks (for a tool that is
// not a shell, the tool).
type GrantAnswer struct {
	Command string `json:"command,omitempty"`
	Prefix  string `json:"prefix,omitempty"`
}

// SuggestedGrant is the pattern an approval at path of a tool's call with these
// arguments is offered for the rest of the session: the program and subcommand of the
// call's first command the app's tool policy asks about, or the tool's name for a tool
// that is not a shell. ok is false when the policy does not ask about it (a grant is
// given only where the tool policy asks).
func (e *Engine) SuggestedGrant(app, path, tool string, args []byte) (string, bool) {
	a, found := e.apps[app]
	if !found || a.ToolPolicy == nil {
		return "", false
	}
	asking, shell := askedOf(a, path, tool, args)
	if len(asking) == 0 {
		return "", false
	}
	if !shell {
		return tool, true
	}
	return strings.Join(policy.SuggestGrant(asking[0]), " "), true
}

// askedOf decides an approval's call again under the app's tool policy of now: the
// argv of each command that asks (a tool that is not a shell: its name) and whether
// the tool is a shell.
func askedOf(app *App, path, tool string, args []byte) ([][]string, bool) {
	ag := askingAgent(app, path)
	sub := policy.Subject{Agent: ag.Name, Tool: tool}
	call := PolicyCall{Level: policy.L2, Actions: []policy.Action{policy.ActExecute}}
	if t, ok := ag.tool(tool).(PolicyTarget); ok {
		call = t.PolicyCall(args)
	}
	if call.Shell != "" {
		return policy.Asking(app.ToolPolicy.Shell(sub, call.Shell), tool), true
	}
	return policy.Asking(app.ToolPolicy.Tool(sub, call.Level, call.Actions, call.Resources), tool), false
}

// grantOf checks a grant given with an answer and turns it into the event that
// records it: only with a yes, only to a question the tool policy asked, and only a
// pattern that names literal words and covers a command the call asks about (for a
// tool that is not a shell: the tool's name).
func (e *Engine) grantOf(app *App, q *askedQuestion, a Answer, user, field string) (*events.GrantGiven, error) {
	if a.Grant == nil {
		return nil, nil
	}
	field += ".grant"
	switch {
	case q.approval == nil:
		return nil, events.FieldError(events.CodeInvalid, field, "goes only with a tool approval")
	case a.Confirmed == nil || !*a.Confirmed:
		return nil, events.FieldError(events.CodeInvalid, field, "goes only with confirmed: true")
	case len(a.Arguments) > 0:
		return nil, events.FieldError(events.CodeInvalid, field, "goes only with the call as proposed, not with edited arguments")
	case app.ToolPolicy == nil || q.approval.Rule == "":
		return nil, events.FieldError(events.CodeInvalid, field, "only a question the tool policy asked can be answered for the session; this tool asks every time")
	}
	g := &events.GrantGiven{GrantID: e.opts.NewID(), InterruptID: q.id, Agent: askingAgent(app, q.path).Name, Tool: q.approval.Tool,
		Command: strings.Join(strings.Fields(a.Grant.Command), " "), Prefix: a.Grant.Prefix, Policy: app.ToolPolicy.Fingerprint(), By: user}
	asking, shell := askedOf(app, q.path, q.approval.Tool, q.approval.Arguments)
	if g.Command == "" && g.Prefix == "" {
		switch {
		case !shell:
			g.Command = q.approval.Tool
		case len(asking) > 0:
			g.Command = strings.Join(policy.SuggestGrant(asking[0]), " ")
		default:
			return nil, events.FieldError(events.CodeInvalid, field, "the tool policy no longer asks about this call: give command or prefix")
		}
	}
	if err := policy.CheckGrantPattern(g.Command, g.Prefix); err != nil {
		return nil, events.FieldError(events.CodeInvalid, field, "%v", err)
	}
	held := policy.Grant{Command: strings.Fields(g.Command), Prefix: g.Prefix}
	switch {
	case !shell && (g.Prefix != "" || g.Command != q.approval.Tool):
		return nil, events.FieldError(events.CodeInvalid, field+".command", "a grant of the tool %s names the tool: %q", q.approval.Tool, q.approval.Tool)
	case shell && len(asking) > 0 && !slices.ContainsFunc(asking, held.Covers):
		names := make([]string, len(asking))
		for i, argv := range asking {
			names[i] = strings.Join(argv, " ")
		}
		return nil, events.FieldError(events.CodeInvalid, field, "%q covers no command this call asks about (%s)", held.Pattern(), strings.Join(names, "; "))
	}
	return g, nil
}
