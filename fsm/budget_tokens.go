package fsm

import (
	"github.com/turnlog/turnlog/contextmgr"
	"github.com/turnlog/turnlog/events"
)

// itemTokens is what each item costs beyond its text, as the context manager counts.
const itemTokens = 4

// countForBudgets gives ag's request shapes a token counter when a budget applies
// and no context manager counts its requests: a check counts the request it is
// about to send.
func (a *App) countForBudgets(ag *Agent, specs []byte) error {
	if !a.budgeted {
		return nil
	}
	ag.outputCap = a.maxOutput(ag) // its settings and the budgets are fixed from here
	for _, f := range ag.faces {
		if f == nil || f.ctxm != nil {
			continue
		}
		name := ag.ModelName
		if name == "" {
			name = ag.LLM
		}
		c, err := contextmgr.NewCounter(contextmgr.EncodingFor(name))
		if err != nil {
			return err
		}
		f.counter = c
		f.fixedTokens = int64(c.Count(f.rules) + itemTokens + c.Count(string(specs)))
	}
	return nil
}

// tokenTally is a conversation's items counted by one counter, each once as it
// joins: a request's count costs the items new since the last one.
type tokenTally struct {
	counts []int64
	sum    int64
}

// tokens counts the conversation's items with c.
func (c *conversation) tokens(counter *contextmgr.Counter) int64 {
	if c.tallies == nil {
		c.tallies = map[*contextmgr.Counter]*tokenTally{}
	}
	t := c.tallies[counter]
	if t == nil {
		t = &tokenTally{}
		c.tallies[counter] = t
	}
	for _, it := range c.items[len(t.counts):] {
		n := int64(itemTokens + counter.Count(itemText(it)))
		t.counts = append(t.counts, n)
		t.sum += n
	}
	return t.sum
}

// truncateTallies forgets the counts of the items past n.
func (c *conversation) truncateTallies(n int) {
	for _, t := range c.tallies {
		for len(t.counts) > n {
			t.sum -= t.counts[len(t.counts)-1]
			t.counts = t.counts[:len(t.counts)-1]
		}
	}
}

// itemText is what of an item a request carries as text.
func itemText(it events.Item) string {
	switch it.Type {
	case events.ItemFunctionCall:
		return it.Name + string(it.Arguments)
	case events.ItemFunctionCallOutput:
		return it.Output
	}
	return it.Content
}
