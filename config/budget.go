package config

import (
	"time"
	_ "time/tzdata" // a budget's time zone is found on any host

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// Budgets is an agent's `budgets:` — limits per scope, and the output a call
// without max_tokens is taken to allow.
type Budgets struct {
	Turn           *BudgetLimit `yaml:"turn"`
	Session        *BudgetLimit `yaml:"session"`
	UserDay        *BudgetLimit `yaml:"user_day"`
	OutputEstimate int64        `yaml:"output_estimate"`
}

// AppBudgets is an app's `budgets:` — an agent's, and the time zone of a user's day.
type AppBudgets struct {
	Budgets  `yaml:",inline"`
	TimeZone string `yaml:"timezone"`
	// ExtendBy is who may extend the app's budgets: owner (whoever may answer the
	// session's questions) or operator.
	ExtendBy string `yaml:"extend_by"`
}

// BudgetLimit is one scope's limit: tokens and cost (a field left out has none).
type BudgetLimit struct {
	InputTokens  int64   `yaml:"input_tokens"`
	OutputTokens int64   `yaml:"output_tokens"`
	TotalTokens  int64   `yaml:"total_tokens"`
	Cost         float64 `yaml:"cost"`
}

// Price is an llm's `price:` per million tokens; cached_input defaults to input.
type Price struct {
	Input       float64  `yaml:"input"`
	CachedInput *float64 `yaml:"cached_input"`
	Output      float64  `yaml:"output"`
}

// Budgets builds budgets at a YAML path (nil stays nil).
func (d *Doc) Budgets(at string, b *Budgets) (*fsm.Budgets, error) {
	if b == nil {
		return nil, nil
	}
	out := &fsm.Budgets{OutputEstimate: b.OutputEstimate}
	for _, s := range []struct {
		name string
		in   *BudgetLimit
		dst  **events.BudgetAmounts
	}{{"turn", b.Turn, &out.Turn}, {"session", b.Session, &out.Session}, {"user_day", b.UserDay, &out.UserDay}} {
		if s.in == nil {
			continue
		}
		l := events.BudgetAmounts{InputTokens: s.in.InputTokens, OutputTokens: s.in.OutputTokens, TotalTokens: s.in.TotalTokens, Cost: s.in.Cost}
		if l.IsZero() {
			return nil, d.ErrAt(at+"."+s.name, "sets no limit: give input_tokens, output_tokens, total_tokens or cost")
		}
		*s.dst = &l
	}
	return out, nil
}

// BudgetZone is an app's budgets' time zone (nil: UTC).
func (d *Doc) BudgetZone(at string, b *AppBudgets) (*time.Location, error) {
	if b == nil || b.TimeZone == "" {
		return nil, nil
	}
	loc, err := time.LoadLocation(b.TimeZone)
	if err != nil {
		return nil, d.ErrAt(at+".timezone", "is no time zone turnlog knows (%q): an IANA name such as Europe/Berlin, or UTC", b.TimeZone)
	}
	return loc, nil
}

// Prices are the app's llms' prices, by llm id.
func (d *Doc) Prices(llms map[string]LLM) map[string]fsm.Price {
	out := map[string]fsm.Price{}
	for id, l := range llms {
		if l.Price == nil {
			continue
		}
		p := fsm.Price{Input: l.Price.Input, CachedInput: l.Price.Input, Output: l.Price.Output}
		if l.Price.CachedInput != nil {
			p.CachedInput = *l.Price.CachedInput
		}
		out[id] = p
	}
	return out
}

// countsCost says whether budgets limit cost in any scope.
func (b *Budgets) countsCost() (string, bool) {
	if b == nil {
		return "", false
	}
	for _, s := range []struct {
		name string
		l    *BudgetLimit
	}{{"turn", b.Turn}, {"session", b.Session}, {"user_day", b.UserDay}} {
		if s.l != nil && s.l.Cost > 0 {
			return s.name + ".cost", true
		}
	}
	return "", false
}

// CheckPrices refuses a cost budget over an llm without a price: its calls would
// cost nothing, and the budget would never hold.
func (d *Doc) CheckPrices(at string, app App) error {
	var problems Errors
	for _, an := range SortedKeys(app.Agents) {
		ag := app.Agents[an]
		var field string
		ok := false
		if app.Budgets != nil {
			field, ok = app.Budgets.countsCost()
		}
		where := at + ".budgets." + field
		if !ok {
			field, ok = ag.Budgets.countsCost()
			where = at + ".agents." + an + ".budgets." + field
		}
		if !ok {
			continue
		}
		if l, found := app.LLMs[ag.LLM]; found && l.Price == nil {
			problems.Add(d.ErrAt(at+".llms."+ag.LLM+".price", "is required: %s counts cost, and agent %s calls this llm", where, an))
		}
	}
	return problems.Err()
}
