package contextmgr

import (
	"fmt"
)

// Manager builds requests for one agent: its config, its counter, and the token cost
// of what every request of the agent carries (instructions and tool schemas).
type Manager struct {
	cfg   Config
	count *Counter
	// fixed costs, counted once
	rulesTokens, toolsTokens int
}

// itemOverhead is what each item costs beyond its text (role and framing).
const itemOverhead = 4

// New makes an agent's manager. model picks the encoding when cfg names none.
// instructions and tools (the tool schemas as JSON) are counted once here: if they
// alone do not fit the window, no request ever could, and that is an error.
func New(cfg Config, model, instructions string, tools []byte) (*Manager, error) {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Encoding == "" {
		cfg.Encoding = EncodingFor(model)
	}
	count, err := NewCounter(cfg.Encoding)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	m := &Manager{cfg: cfg, count: count, rulesTokens: count.Count(instructions) + itemOverhead, toolsTokens: count.Count(string(tools))}
	if fixed := m.rulesTokens + m.toolsTokens; fixed >= cfg.Window {
		return nil, fmt.Errorf("window: the instructions (%d tokens) and tool schemas (%d tokens) alone fill the %d-token window",
			m.rulesTokens, m.toolsTokens, cfg.Window)
	}
	return m, nil
}

// Config is the manager's config, defaults filled.
func (m *Manager) Config() Config { return m.cfg }

// Counter is the manager's token counter.
func (m *Manager) Counter() *Counter { return m.count }

// OverflowError says a request cannot fit the window even with everything that may
// be left out left out.
type OverflowError struct {
	Tokens, Window int
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("the request needs %d tokens with only what may never be left out (instructions, tools, the latest user message, the current step, the last failure, the plan, the summary); the window is %d",
		e.Tokens, e.Window)
}

// WithPermissions is the manager for requests whose instructions end with a
// generated tools-and-permissions section: the same config and counter, the
// section's tokens counted in the tools layer. An error says they would fill the
// window.
func (m *Manager) WithPermissions(section string) (*Manager, error) {
	out := *m
	out.toolsTokens += m.count.Count(section)
	if fixed := out.rulesTokens + out.toolsTokens; fixed >= out.cfg.Window {
		return nil, fmt.Errorf("window: the instructions (%d tokens) and tool schemas and permissions (%d tokens) alone fill the %d-token window",
			out.rulesTokens, out.toolsTokens, out.cfg.Window)
	}
	return &out, nil
}
