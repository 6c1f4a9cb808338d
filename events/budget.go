package events

const (
	TypeBudgetReached  = "BudgetReached"
	TypeBudgetResolved = "BudgetResolved"
)

// InterruptBudget is the kind of the interrupt a reached budget asks.
const InterruptBudget = "budget"

// Budget scopes: what a budget's spend is counted over.
const (
	BudgetTurn    = "turn"     // the turn's model calls
	BudgetSession = "session"  // the session's
	BudgetUserDay = "user_day" // the session owner's, in all sessions of the app, that day
)

// Budget levels: whose budget it is.
const (
	BudgetOfApp   = "app"   // counts every agent of the app
	BudgetOfAgent = "agent" // counts the agent's own calls
)

// Decisions of BudgetResolved.
const (
	BudgetExtend = "extend"
	BudgetStop   = "stop"
)

// BudgetAmounts are tokens and cost: a budget's limit (a field left out has none),
// what was spent, what a call may spend, or an extension. Cost is in the currency
// of the config's price table.
type BudgetAmounts struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	TotalTokens  int64   `json:"total_tokens,omitempty"`
	Cost         float64 `json:"cost,omitempty"`
}

// Add returns the sum of two amounts.
func (a BudgetAmounts) Add(b BudgetAmounts) BudgetAmounts {
	return BudgetAmounts{InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		TotalTokens: a.TotalTokens + b.TotalTokens, Cost: a.Cost + b.Cost}
}

// IsZero says no field is set.
func (a BudgetAmounts) IsZero() bool { return a == BudgetAmounts{} }

// BudgetReached records that an agent's next model call would pass a budget: the
// turn suspends with a budget interrupt before the call, until a person extends the
// budget or stops the turn. It keeps the figures the decision used: the limit in
// force (the config's, plus the extensions given), what the scope had spent, and
// what the call may spend (its counted input tokens, the most output it allows,
// their cost). Path: the model call's path plus "/budget" (then "/budget/2", … when
// the same call meets a budget again after an answer).
type BudgetReached struct {
	InterruptID string `json:"interrupt_id"`
	Agent       string `json:"agent"`
	LLM         string `json:"llm"`
	Scope       string `json:"scope"`
	Level       string `json:"level"`
	// Day is the user_day's day (YYYY-MM-DD in the budget's time zone).
	Day     string        `json:"day,omitempty"`
	Limit   BudgetAmounts `json:"limit"`
	Spent   BudgetAmounts `json:"spent"`
	Request BudgetAmounts `json:"request"`
	// Exceeded names the limit's fields the call would pass.
	Exceeded []string `json:"exceeded"`
	Reason   string   `json:"reason"`
}

func (*BudgetReached) EventType() string  { return TypeBudgetReached }
func (*BudgetReached) SchemaVersion() int { return 1 }

// BudgetResolved records a person's answer to a budget interrupt, at its path:
// extend (the scope's limit grows by Extend: for the turn, the session, or the
// owner's day, as the budget counts) or stop (the turn is canceled). Scope, Level,
// Agent and Day repeat the BudgetReached's, so the read models know what grew.
type BudgetResolved struct {
	InterruptID string         `json:"interrupt_id"`
	Decision    string         `json:"decision"`
	Extend      *BudgetAmounts `json:"extend,omitempty"`
	Scope       string         `json:"scope"`
	Level       string         `json:"level"`
	Agent       string         `json:"agent"`
	Day         string         `json:"day,omitempty"`
	By          string         `json:"by"`
}

func (*BudgetResolved) EventType() string  { return TypeBudgetResolved }
func (*BudgetResolved) SchemaVersion() int { return 1 }
