package fsm

import (
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// budgetPath is where a model call's k-th budget question is recorded: <call>/budget,
// then <call>/budget/2, /3 … when the call meets a budget again after an answer.
func budgetPath(call string, k int) string {
	if k == 1 {
		return call + "/budget"
	}
	return fmt.Sprintf("%s/budget/%d", call, k)
}

// budgetHold is why a model call may not be made now: the turn waits for a person's
// answer to a budget question, or a person stopped the turn at its budget.
type budgetHold struct {
	waiting *Interrupt
	stopped string // the reason the turn ends canceled
}

// recordedBudget goes through the budget questions recorded at a model call's path,
// in the order they were asked: each answered with an extension lets the call go on
// (a turn's extension counts from here); one unanswered holds the turn again; one
// answered with stop ends it. Only answers in this store's log count: a replay
// suspends where the recording did. It returns what to record (emit skips what is
// logged) and the k of the next question at the path.
func (r *run) recordedBudget(call string) ([]events.Event, int, *budgetHold, *ResultError) {
	var out []events.Event
	for k := 1; ; k++ {
		at := budgetPath(call, k)
		br, ev, found, fail := replayed[*events.BudgetReached](r, events.TypeBudgetReached, at, "")
		if fail != nil {
			return nil, 0, nil, fail
		}
		if !found {
			return out, k, nil, nil
		}
		out = append(out, ev)
		aev, ok := r.logged.get(events.TypeBudgetResolved, at)
		if !ok {
			return out, k, &budgetHold{waiting: budgetInterrupt(br, at)}, nil
		}
		ans, err := events.DecodeAs[*events.BudgetResolved](aev)
		if err != nil {
			return nil, 0, nil, &ResultError{Code: events.CodeCorruptLog, Path: at, Message: err.Error()}
		}
		if ans.Decision != events.BudgetExtend {
			return out, k, &budgetHold{stopped: fmt.Sprintf("%s stopped the turn at its budget: %s", ans.By, br.Reason)}, nil
		}
		if b := r.log.budget; b != nil && ans.Scope == events.BudgetTurn && ans.Extend != nil {
			b.mu.Lock()
			key := extKey(ans.Level, ans.Agent)
			b.turnExt[key] = b.turnExt[key].Add(*ans.Extend)
			b.mu.Unlock()
		}
	}
}

// checkBudget decides, before agent ag's model call at path is made, whether it may
// be: every budget over the scopes (turn, session, user day) and levels (the app's,
// the agent's) is checked with what its scope spent, the extensions given, and what
// the call may spend (input the request's counted tokens). The first it would pass
// is a BudgetReached at the call's k-th budget path, and the turn waits.
func (r *run) checkBudget(ag *Agent, call string, k int, input int64) (*events.Event, *budgetHold, *ResultError) {
	b := r.log.budget
	if b == nil {
		return nil, nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if day := r.app.budgetDay(r.e.opts.Clock()); day != b.key.day {
		if err := r.readSpend(b, day); err != nil {
			return nil, nil, &ResultError{Code: events.CodeStorageFailed, Path: call, Message: err.Error()}
		}
	}
	request := r.app.requestAmounts(ag, input)
	for _, scope := range budgetScopes {
		for _, level := range []string{events.BudgetOfApp, events.BudgetOfAgent} {
			budgets := r.app.Budgets
			if level == events.BudgetOfAgent {
				budgets = ag.Budgets
			}
			set := budgets.limit(scope)
			if set == nil {
				continue
			}
			limit := set.Add(b.extended(scope, level, ag.Name))
			spent := b.spent(&r.e.days, scope, level, ag.Name)
			over := exceeded(limit, spent, request, set)
			if len(over) == 0 {
				continue
			}
			at := budgetPath(call, k)
			br := &events.BudgetReached{InterruptID: interruptID(r.turn, at), Agent: ag.Name, LLM: ag.LLM, Scope: scope, Level: level,
				Limit: limit, Spent: spent, Request: request, Exceeded: over}
			if scope == events.BudgetUserDay {
				br.Day = b.key.day
			}
			br.Reason = budgetReason(br)
			ev, err := events.New(r.turn, at, br)
			if err != nil {
				return nil, nil, &ResultError{Code: events.CodeInternal, Path: at, Message: err.Error()}
			}
			r.e.opts.Observer.BudgetReached(r.app.Name, ag.Name, scope)
			return &ev, &budgetHold{waiting: budgetInterrupt(br, at)}, nil
		}
	}
	return nil, nil, nil
}

// extKey names a turn's extension of a budget: its level and, for an agent's, the agent.
func extKey(level, agent string) string {
	if level == events.BudgetOfApp {
		return level
	}
	return level + "/" + agent
}

// budgetInterrupt is the question a BudgetReached asks a person.
func budgetInterrupt(br *events.BudgetReached, path string) *Interrupt {
	figures := events.MustMarshal(projection.BudgetFigures{Scope: br.Scope, Level: br.Level, Agent: br.Agent, LLM: br.LLM, Day: br.Day,
		Limit: br.Limit, Spent: br.Spent, Request: br.Request, Exceeded: br.Exceeded})
	return &Interrupt{ID: br.InterruptID, Kind: events.InterruptBudget, Path: path, Arguments: figures, Reason: br.Reason}
}

// heldAtBudget ends the turn's run at a budget: it waits for a person's answer, or
// ends canceled because a person stopped it.
func (r *run) heldAtBudget(hold *budgetHold, pending []events.Event) (*Result, error) {
	if hold.waiting != nil {
		return r.suspend([]*Interrupt{hold.waiting}, pending...)
	}
	return r.cancelBecause(hold.stopped, pending...)
}
