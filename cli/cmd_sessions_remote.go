package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/client"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// serverFlags are where sessions, show and resume find a running server instead of
// a database: its address and an API key (none: a --dev server's).
type serverFlags struct{ url, key string }

func (sf *serverFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&sf.url, "server", "", "a running turnlog's address (http://HOST:PORT): talk to it instead of the database (env TURNLOG_SERVER)")
	fs.StringVar(&sf.key, "key", "", "the API key for --server (env TURNLOG_KEY)")
}

func (sf serverFlags) client() *client.Client {
	return client.New(strings.TrimRight(sf.url, "/"), sf.key, nil)
}

// remoteSessions lists the key's user's sessions through the server.
func remoteSessions(ctx context.Context, c *cliContext, sf serverFlags, app string) error {
	cl := sf.client()
	page, err := cl.ListSessions(ctx, app, 100, "")
	if err != nil {
		return err
	}
	for _, s := range page.Sessions {
		sum, err := cl.Session(ctx, s.ID)
		if err != nil {
			return err
		}
		turns, err := cl.Turns(ctx, s.ID)
		if err != nil {
			return err
		}
		first := ""
		if len(turns) > 0 {
			first = turns[0].Input
		}
		fmt.Fprintf(c.stdout, "%s  %-10s %-8s %3d  %s\n", s.ID, s.App, sum.Status, s.TurnCount, events.ShortenForMessage(strings.Join(strings.Fields(first), " "), 60))
	}
	return nil
}

// remoteQuestions are a session's waiting questions through the server.
func remoteQuestions(ctx context.Context, cl *client.Client, id string) ([]question, error) {
	pending, err := cl.Interrupts(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]question, len(pending))
	for i, p := range pending {
		out[i] = question{ID: p.ID, Kind: p.Kind, Tool: p.Tool, Rule: p.Rule, Level: p.Level, Grant: p.Grant, Reason: p.Reason, Arguments: p.Arguments}
	}
	return out, nil
}

// remoteShow prints a session through the server.
func remoteShow(ctx context.Context, c *cliContext, sf serverFlags, id string) error {
	cl := sf.client()
	s, err := cl.Session(ctx, id)
	if err != nil {
		return err
	}
	turns, err := cl.Turns(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "session %s  app %s  owner %s  agent %s\n", s.ID, s.App, s.Owner, s.ActiveAgent)
	for _, t := range turns {
		fmt.Fprintf(c.stdout, "turn %s  %-9s %s\n", t.TurnID, t.Status, events.ShortenForMessage(t.Input, 80))
	}
	qs, err := remoteQuestions(ctx, cl, id)
	if err != nil {
		return err
	}
	printQuestions(c, qs)
	if len(qs) > 0 {
		return ExitSuspended
	}
	return nil
}

// remoteResume answers through the server, as the key's user.
func remoteResume(ctx context.Context, c *cliContext, sf serverFlags, id string, given []string, all string) error {
	cl := sf.client()
	qs, err := remoteQuestions(ctx, cl, id)
	if err != nil {
		return err
	}
	answers, err := answersFor(c, id, qs, given, all)
	if err != nil {
		return err
	}
	m := make(map[string]client.Answer, len(answers))
	for k, a := range answers {
		m[k] = clientAnswer(a)
	}
	res, err := cl.RunTurn(ctx, id, client.TurnRequest{ResumeMap: m})
	if err != nil {
		return err
	}
	out := &fsm.Result{Session: id, TurnID: res.TurnID, Status: res.Status, Output: res.Output}
	for _, in := range res.Interrupts {
		out.Interrupts = append(out.Interrupts, fsm.Interrupt{ID: in.ID, Kind: in.Kind, Tool: in.Tool, Arguments: in.Arguments, Rule: in.Rule})
	}
	if res.Error != nil {
		out.Error = &fsm.ResultError{Code: events.Code(res.Error.Code), Message: res.Error.Message}
	}
	return report(c, out)
}

// clientAnswer is an answer as the Go client sends it.
func clientAnswer(a fsm.Answer) client.Answer {
	out := client.Answer{Confirmed: a.Confirmed, Arguments: a.Arguments}
	if a.RejectionMessage != nil {
		out.RejectionMessage = *a.RejectionMessage
	}
	if a.Decision != nil {
		out.Decision = *a.Decision
	}
	if a.ReviewerNotes != nil {
		out.ReviewerNotes = *a.ReviewerNotes
	}
	if a.Grant != nil {
		out.Grant = &client.GrantPattern{Command: a.Grant.Command, Prefix: a.Grant.Prefix}
	}
	if x := a.Extend; x != nil {
		out.Extend = &client.BudgetAmounts{InputTokens: x.InputTokens, OutputTokens: x.OutputTokens, TotalTokens: x.TotalTokens, Cost: x.Cost}
	}
	return out
}
