package projection

import (
	"time"

	"github.com/turnlog/turnlog/events"
)

// SpendFigures are what model calls spent: how many, their usage, their cost.
type SpendFigures struct {
	Calls int64        `json:"calls"`
	Usage events.Usage `json:"usage"`
	Cost  float64      `json:"cost"`
}

// Add folds other figures into f.
func (f SpendFigures) Add(o SpendFigures) SpendFigures {
	return SpendFigures{Calls: f.Calls + o.Calls, Usage: f.Usage.Add(o.Usage), Cost: f.Cost + o.Cost}
}

// SpendQuery names what a budget check counts: a session, and its owner's day in
// its app.
type SpendQuery struct {
	Session, App, Owner, Day string
}

// Spend is what budgets count, by agent: the session's spend, its owner's spend in
// all sessions of the app that day, and the extensions people gave the session's
// and that day's budgets.
type Spend struct {
	Session    map[string]SpendFigures `json:"session"`
	Day        map[string]SpendFigures `json:"day"`
	Extensions []BudgetExtension       `json:"extensions"`
}

// BudgetExtension is what a person's answer added to a budget: its scope (session
// or user_day), level (app or agent), agent, day (user_day) and amounts.
type BudgetExtension struct {
	Scope   string               `json:"scope"`
	Level   string               `json:"level"`
	Agent   string               `json:"agent,omitempty"`
	Day     string               `json:"day,omitempty"`
	Amounts events.BudgetAmounts `json:"amounts"`
}

// SpendAdded counts a model call's usage and cost to its session, agent, llm and
// budget day.
type SpendAdded struct {
	Session, Day, Agent, LLM string
	Usage                    events.Usage
	Cost                     float64
}

// BudgetExtended keeps a person's extension of a session's or a day's budget.
type BudgetExtended struct {
	Session   string
	Seq       int64
	Extension BudgetExtension
}

func (SpendAdded) change()     {}
func (BudgetExtended) change() {}

// DayOf is the budget day of a model call: the one it recorded, else the UTC day
// of its time.
func DayOf(recorded string, at time.Time) string {
	if recorded != "" {
		return recorded
	}
	return at.UTC().Format(time.DateOnly)
}

// BudgetFigures are what a budget interrupt shows a person (its arguments): the
// budget, what its scope spent, what the call may spend, and the limits it passes.
type BudgetFigures struct {
	Scope    string               `json:"scope"`
	Level    string               `json:"level"`
	Agent    string               `json:"agent"`
	LLM      string               `json:"llm"`
	Day      string               `json:"day,omitempty"`
	Limit    events.BudgetAmounts `json:"limit"`
	Spent    events.BudgetAmounts `json:"spent"`
	Request  events.BudgetAmounts `json:"request"`
	Exceeded []string             `json:"exceeded"`
}
