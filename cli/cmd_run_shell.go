package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/pkg/turnlog"
)

// runInteractive drives one turn as a local shell: what the agent does is printed as
// it is committed, and each question for a person is asked on the terminal (y/N).
func runInteractive(ctx context.Context, c *cliContext, store turnlog.Store, engine *fsm.Engine, session, input string) error {
	answers := bufio.NewReader(c.input())
	st, err := engine.StartTurn(ctx, session, input)
	for {
		if err != nil {
			return err
		}
		var res *fsm.Result
		if res, err = followTurn(ctx, c, store, session, st); err != nil {
			return err
		}
		if res.Status != fsm.StatusSuspended {
			return report(c, res)
		}
		resume := map[string]fsm.Answer{}
		for _, i := range res.Interrupts {
			resume[i.ID] = ask(c, answers, i)
		}
		st, err = engine.Resume(fsm.AsOperator(ctx), session, "local", resume) // the shell's own user: an operator
	}
}

// followTurn prints the turn's events as they are committed until it ends.
func followTurn(ctx context.Context, c *cliContext, store turnlog.Store, session string, st *fsm.StartedTurn) (*fsm.Result, error) {
	wake, stop := store.Watch(session)
	defer stop()
	done := make(chan struct{})
	var res *fsm.Result
	var werr error
	go func() {
		res, werr = st.Wait()
		close(done)
	}()
	from := st.StartSeq - 1
	for {
		evs, err := store.Events(ctx, session, from)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			from = ev.Seq
			if line := describe(ev); line != "" {
				fmt.Fprintln(c.stderr, line)
			}
		}
		select {
		case <-wake:
		case <-done:
			if evs, err := store.Events(ctx, session, from); err == nil {
				for _, ev := range evs {
					if line := describe(ev); line != "" {
						fmt.Fprintln(c.stderr, line)
					}
				}
			}
			return res, werr
		}
	}
}

// describe is one terminal line for an event worth showing, or "".
func describe(ev events.Event) string {
	d := gjson.ParseBytes(ev.Data)
	switch ev.Type {
	case events.TypeToolScheduled:
		return fmt.Sprintf("→ %s %s", d.Get("tool").String(), d.Get("arguments").Raw)
	case events.TypeToolResulted:
		out := d.Get("output").String()
		if len(out) > 200 {
			out = out[:200] + "…"
		}
		return fmt.Sprintf("← %s %s", d.Get("tool").String(), out)
	case events.TypePolicyDecided:
		if d.Get("decision").String() == "allow" {
			return ""
		}
		return fmt.Sprintf("policy: %s %s (%s, %s)", d.Get("decision").String(), d.Get("tool").String(), d.Get("level").String(), d.Get("rule").String())
	case events.TypeHandoffOccurred:
		return fmt.Sprintf("handoff: %s → %s", d.Get("from").String(), d.Get("to").String())
	case events.TypeSkillLoaded:
		return fmt.Sprintf("skill: loaded %s (%s)", d.Get("name").String(), d.Get("path").String())
	case events.TypeContextCompacted:
		return fmt.Sprintf("context: compacted items %d–%d into a summary (%d → %d tokens)",
			d.Get("from").Int(), d.Get("covers").Int(), d.Get("tokens_before").Int(), d.Get("tokens_after").Int())
	}
	return ""
}

// ask puts one question to the person at the terminal; anything but y is no.
func ask(c *cliContext, answers *bufio.Reader, i fsm.Interrupt) fsm.Answer {
	if i.Kind == events.InterruptBudget {
		fmt.Fprintln(c.stderr, i.Reason)
		for {
			fmt.Fprint(c.stderr, "extend the budget by (e.g. output_tokens=2000,cost=0.5; empty: stop the turn)? ")
			line, err := answers.ReadString('\n')
			if v := strings.TrimSpace(line); v != "" {
				a, perr := budgetAnswerFrom(i.ID, "extend:"+v)
				if perr == nil {
					return a
				}
				fmt.Fprintln(c.stderr, perr)
				if err == nil {
					continue // ask again: a mistyped amount is no answer
				}
			}
			stop := events.BudgetStop
			return fsm.Answer{Decision: &stop}
		}
	}
	if i.Kind == events.InterruptGuardrailReview {
		fmt.Fprintf(c.stderr, "review (rule %s): %s\nrelease it? [y/N] ", i.Rule, i.Arguments)
	} else {
		fmt.Fprintf(c.stderr, "approve %s %s?", i.Tool, i.Arguments)
		if i.Level != "" {
			fmt.Fprintf(c.stderr, " (%s, rule %s, %s)", i.Level, i.Rule, strings.Join(i.Resources, ", "))
		}
		if i.Alternative != "" {
			fmt.Fprintf(c.stderr, " instead: %s", i.Alternative)
		}
		fmt.Fprint(c.stderr, " [y/N] ")
	}
	line, err := answers.ReadString('\n')
	yes := err == nil || err == io.EOF
	yes = yes && strings.EqualFold(strings.TrimSpace(line), "y")
	if i.Kind == events.InterruptGuardrailReview {
		d := events.DecisionReject
		if yes {
			d = events.DecisionApprove
		}
		return fsm.Answer{Decision: &d}
	}
	return fsm.Answer{Confirmed: &yes}
}
