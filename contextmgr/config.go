package contextmgr

import "fmt"

// Layer is a part of a request with its own token budget.
type Layer int

const (
	LayerRules   Layer = iota // the agent's instructions (and the skill index)
	LayerGoal                 // user messages: the goal, and what was asked since
	LayerTools                // tool schemas and permissions
	LayerFiles                // file and reference tool results
	LayerTrace                // the current turn's calls, results and answers
	LayerSummary              // a compaction summary and older history
	numLayers
)

var layerNames = [numLayers]string{"rules", "goal", "tools", "files", "trace", "summary"}

func (l Layer) String() string { return layerNames[l] }

// Budgets are each layer's share of the window, in percent.
type Budgets [numLayers]int

// DefaultBudgets: rules 10%, goal and state 15%, tools and permissions 15%, files and
// references 40%, recent trace 10%, summary and history 10%.
var DefaultBudgets = Budgets{LayerRules: 10, LayerGoal: 15, LayerTools: 15, LayerFiles: 40, LayerTrace: 10, LayerSummary: 10}

// Config is an agent's context settings.
type Config struct {
	// Window is the most tokens a request may hold (instructions, tool schemas and
	// items together). A request never exceeds it.
	Window   int
	Encoding string // o200k_base or cl100k_base; empty: chosen from the model's name
	Budgets  Budgets
	// MaxOutputTokens caps one tool output in a request (head and tail are kept).
	MaxOutputTokens int
	// KeepUserMessages is how many of the latest user messages a compacted request
	// still carries verbatim (1–3).
	KeepUserMessages int
	// FileTools are the tools whose results count as files and references.
	FileTools []string
	// DedupTools are the tools whose results are search hits: duplicates are dropped.
	DedupTools []string
	// PlanTools are the tools whose latest call is the current plan (never dropped).
	PlanTools []string
	// TrustedTools are turnlog's own tools whose output comes from the operator's
	// configuration, not from outside (a skill's text): it enters requests as it is,
	// neither cut nor marked as untrusted data.
	TrustedTools []string
}

// Defaults for Config's zero fields.
const (
	DefaultKeepUserMessages = 3
	minOutputTokens         = 64
)

// WithDefaults fills zero fields and checks the rest; errors name the field.
func (c Config) WithDefaults() (Config, error) {
	if c.Window <= 0 {
		return c, fmt.Errorf("window: must be a positive number of tokens")
	}
	if c.Budgets == (Budgets{}) {
		c.Budgets = DefaultBudgets
	}
	sum := 0
	for l, p := range c.Budgets {
		if p < 0 {
			return c, fmt.Errorf("budgets.%s: must not be negative", Layer(l))
		}
		sum += p
	}
	if sum != 100 {
		return c, fmt.Errorf("budgets: the shares add up to %d%%, not 100%%", sum)
	}
	if c.MaxOutputTokens <= 0 {
		c.MaxOutputTokens = max(minOutputTokens, c.Window*c.Budgets[LayerFiles]/100/4)
	}
	if c.KeepUserMessages == 0 {
		c.KeepUserMessages = DefaultKeepUserMessages
	}
	if c.KeepUserMessages < 1 || c.KeepUserMessages > 3 {
		return c, fmt.Errorf("keep_user_messages: must be 1, 2 or 3")
	}
	if c.FileTools == nil {
		c.FileTools = []string{"read_file", "grep", "glob", "load_skill", "memory_search"}
	}
	if c.DedupTools == nil {
		c.DedupTools = []string{"grep", "glob"}
	}
	if c.PlanTools == nil {
		c.PlanTools = []string{"update_plan"}
	}
	if c.TrustedTools == nil {
		c.TrustedTools = []string{"load_skill"}
	}
	return c, nil
}

// Budget is a layer's budget in tokens.
func (c Config) Budget(l Layer) int { return c.Window * c.Budgets[l] / 100 }
