package config

import (
	"strings"

	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/fsm"
)

// Context is an agent's `context:` section: its requests are built by the context
// manager within Window tokens.
type Context struct {
	Window   int    `yaml:"window"`
	Encoding string `yaml:"encoding"` // o200k_base or cl100k_base; default: from the llm's model
	// Budgets are each layer's share of the window in percent: rules, goal, tools,
	// files, trace, summary (together 100).
	Budgets          map[string]int `yaml:"budgets"`
	MaxOutputTokens  int            `yaml:"max_output_tokens"`
	KeepUserMessages int            `yaml:"keep_user_messages"`
	// Summarizer is the llm that writes compaction summaries (default the agent's).
	Summarizer string   `yaml:"summarizer"`
	FileTools  []string `yaml:"file_tools"`
	DedupTools []string `yaml:"dedup_tools"`
	PlanTools  []string `yaml:"plan_tools"`
	// TrustedTools' outputs enter requests unmarked and uncut (default: load_skill).
	TrustedTools []string `yaml:"trusted_tools"`
}

var layerByName = map[string]contextmgr.Layer{"rules": contextmgr.LayerRules, "goal": contextmgr.LayerGoal, "tools": contextmgr.LayerTools,
	"files": contextmgr.LayerFiles, "trace": contextmgr.LayerTrace, "summary": contextmgr.LayerSummary}

// Context turns an agent's context section into the manager's config on ag, and
// finds its summariser among models. Errors name the field.
func (d *Doc) Context(at string, c *Context, ag *fsm.Agent, llms map[string]LLM, models map[string]fsm.Model) error {
	if c == nil {
		return nil
	}
	cfg := contextmgr.Config{Window: c.Window, Encoding: c.Encoding, MaxOutputTokens: c.MaxOutputTokens, KeepUserMessages: c.KeepUserMessages,
		FileTools: c.FileTools, DedupTools: c.DedupTools, PlanTools: c.PlanTools, TrustedTools: c.TrustedTools}
	if cfg.Encoding == "" {
		cfg.Encoding = contextmgr.EncodingFor(llms[ag.LLM].Model)
	}
	for name, share := range c.Budgets {
		l, ok := layerByName[name]
		if !ok {
			return d.ErrAt(at+".budgets."+name, "is not a layer (rules, goal, tools, files, trace, summary)")
		}
		cfg.Budgets[l] = share
	}
	if len(c.Budgets) > 0 && len(c.Budgets) < len(layerByName) {
		return d.ErrAt(at+".budgets", "give every layer its share (rules, goal, tools, files, trace, summary), or none for the defaults")
	}
	checked, err := cfg.WithDefaults()
	if err != nil {
		field, msg, _ := strings.Cut(err.Error(), ": ")
		return d.ErrAt(at+"."+field, "%s", msg)
	}
	if _, err := contextmgr.NewCounter(checked.Encoding); err != nil {
		return d.ErrAt(at+".encoding", "%v", err)
	}
	ag.Context = &cfg
	if c.Summarizer != "" {
		m, ok := models[c.Summarizer]
		if !ok {
			return d.ErrAt(at+".summarizer", "names no registered llm (%q)", c.Summarizer)
		}
		ag.SummaryModel, ag.SummaryLLM = m, c.Summarizer
	}
	return nil
}
