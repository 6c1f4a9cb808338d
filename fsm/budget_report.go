package fsm

import (
	"context"
	"maps"
	"slices"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// BudgetStatus is one budget of a session's app as it stands now: its scope, level
// (an agent's names the agent), day (user_day), its limit with the extensions given,
// and what its scope spent (turn: the session's latest turn).
type BudgetStatus struct {
	Scope string               `json:"scope"`
	Level string               `json:"level"`
	Agent string               `json:"agent,omitempty"`
	Day   string               `json:"day,omitempty"`
	Limit events.BudgetAmounts `json:"limit"`
	Spent events.BudgetAmounts `json:"spent"`
}

// SessionSpend is what a session's model calls spent, by agent — in the session,
// in its latest turn, and its owner's in the app today — and each budget against it.
type SessionSpend struct {
	Session map[string]projection.SpendFigures `json:"session"`
	Turn    map[string]projection.SpendFigures `json:"turn"`
	Day     string                             `json:"day"`
	UserDay map[string]projection.SpendFigures `json:"user_day"`
	Budgets []BudgetStatus                     `json:"budgets"`
}

// Spend reports a session's spend and its budgets. Errors: not_found.
func (e *Engine) Spend(ctx context.Context, session string) (*SessionSpend, error) {
	s, err := e.store.Session(ctx, session)
	if err != nil {
		return nil, err
	}
	app := e.apps[s.App]
	day := projection.DayOf("", e.opts.Clock())
	if app != nil {
		day = app.budgetDay(e.opts.Clock())
	}
	key := dayKey{app: s.App, owner: s.Owner, day: day}
	base := e.days.read(key) // what the store's figures already count of this engine's calls
	stored, err := e.store.Spend(ctx, projection.SpendQuery{Session: session, App: s.App, Owner: s.Owner, Day: day})
	if err != nil {
		return nil, err
	}
	out := &SessionSpend{Session: stored.Session, Day: day, UserDay: stored.Day, Turn: map[string]projection.SpendFigures{}, Budgets: []BudgetStatus{}}
	turnExt := map[string]events.BudgetAmounts{}
	if t, err := e.store.LastTurn(ctx, session); err == nil {
		evs, err := e.store.Events(ctx, session, t.StartSeq-1)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			switch ev.Type {
			case events.TypeModelCalled:
				if mc, err := events.DecodeAs[*events.ModelCalled](ev); err == nil {
					out.Turn[mc.Agent] = out.Turn[mc.Agent].Add(projection.SpendFigures{Calls: 1, Usage: mc.Usage, Cost: mc.Cost})
				}
			case events.TypeBudgetResolved:
				if a, err := events.DecodeAs[*events.BudgetResolved](ev); err == nil && a.Decision == events.BudgetExtend && a.Scope == events.BudgetTurn && a.Extend != nil {
					k := extKey(a.Level, a.Agent)
					turnExt[k] = turnExt[k].Add(*a.Extend)
				}
			}
		}
	} else if !events.IsCode(err, events.CodeNotFound) {
		return nil, err
	}
	if app == nil {
		return out, nil
	}
	b := &turnBudget{key: key, base: base, stored: stored, turnExt: turnExt, turn: map[string]events.BudgetAmounts{}}
	for agent, f := range out.Turn {
		b.turn[agent] = spentAmounts(f.Usage, f.Cost)
	}
	for _, scope := range budgetScopes {
		if set := app.Budgets.limit(scope); set != nil {
			out.Budgets = append(out.Budgets, b.status(&e.days, scope, events.BudgetOfApp, "", set))
		}
		for _, name := range slices.Sorted(maps.Keys(app.Agents)) {
			if set := app.Agents[name].Budgets.limit(scope); set != nil {
				out.Budgets = append(out.Budgets, b.status(&e.days, scope, events.BudgetOfAgent, name, set))
			}
		}
	}
	return out, nil
}

// status is one budget against what its scope spent.
func (b *turnBudget) status(days *dayTally, scope, level, agent string, set *events.BudgetAmounts) BudgetStatus {
	st := BudgetStatus{Scope: scope, Level: level, Agent: agent, Limit: set.Add(b.extended(scope, level, agent)), Spent: b.spent(days, scope, level, agent)}
	if scope == events.BudgetUserDay {
		st.Day = b.key.day
	}
	return st
}
