package fsm

import (
	"maps"
	"sync"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// A budget check counts without reading the store at each step. A turn reads the
// session's and its owner's day spend once, when its run begins (with the
// extensions people gave), and then adds what it spends: the turn's own calls (each
// call of the turn, replayed or made), the session's (calls not in the store when it
// read), and the day's through the engine's day tally, which every run of this engine
// adds its calls to — so concurrent sessions of one user on one node see each other's
// spend at once. Sessions on other nodes are seen when a run begins; what a check
// cannot see is at most the calls under way elsewhere, one per concurrent run.

// dayKey is a user's day in an app.
type dayKey struct{ app, owner, day string }

// dayTally is what this engine's calls spent, by user day and agent, since it
// started. Only differences are read (what was added since a run read the store), so
// a day's entry may be dropped once no run can read it.
type dayTally struct {
	mu    sync.Mutex
	spent map[dayKey]map[string]events.BudgetAmounts
}

func (t *dayTally) add(k dayKey, agent string, a events.BudgetAmounts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spent == nil {
		t.spent = map[dayKey]map[string]events.BudgetAmounts{}
	}
	m := t.spent[k]
	if m == nil {
		for old := range t.spent { // the app's days two behind are done with
			if old.app == k.app && old.day < dayBefore(k.day) {
				delete(t.spent, old)
			}
		}
		m = map[string]events.BudgetAmounts{}
		t.spent[k] = m
	}
	m[agent] = m[agent].Add(a)
}

// read copies a day's entry.
func (t *dayTally) read(k dayKey) map[string]events.BudgetAmounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.spent[k])
}

// since hands add what each agent's calls added to a day since base was read.
func (t *dayTally) since(k dayKey, base map[string]events.BudgetAmounts, add func(agent string, a events.BudgetAmounts)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for agent, a := range t.spent[k] {
		b := base[agent]
		add(agent, events.BudgetAmounts{InputTokens: a.InputTokens - b.InputTokens, OutputTokens: a.OutputTokens - b.OutputTokens,
			TotalTokens: a.TotalTokens - b.TotalTokens, Cost: a.Cost - b.Cost})
	}
}

// turnBudget is what a turn's budget checks count, shared by the turn's run and the
// agent runs nested in it.
type turnBudget struct {
	mu      sync.Mutex
	key     dayKey
	stored  projection.Spend                // read when the run began (or the day turned)
	base    map[string]events.BudgetAmounts // the engine's day tally then
	turn    map[string]events.BudgetAmounts // the turn's calls, by agent
	session map[string]events.BudgetAmounts // the session's calls since the read
	turnExt map[string]events.BudgetAmounts // the turn's extensions, by level/agent
	// fresh, on several nodes, is the day's spend as the session's latest append read
	// it (DaySpendFeed); unfollow ends that.
	unrecorded map[string]daySpend // calls noted whose append has not committed, by type and path
	fresh      func() (map[string]projection.SpendFigures, bool)
	unfollow   func()
	// extensions is the engine's count of budget extensions when the store was read:
	// a snapshot from before another was given is not reused (it lacks it).
	extensions int64
}

// loadBudget gets what the turn's checks count (only in an app with budgets, once
// per run of the turn): read from the store, unless only turn budgets are set, or
// this engine ran the session's previous turn and nothing was appended since — then
// what that run counted goes on (on one node: with several, a run always reads).
func (r *run) loadBudget() error {
	if !r.app.budgeted || r.prefix != "" {
		return nil
	}
	b := &turnBudget{turn: map[string]events.BudgetAmounts{}, session: map[string]events.BudgetAmounts{}, turnExt: map[string]events.BudgetAmounts{}}
	r.log.budget = b
	day := r.app.budgetDay(r.e.opts.Clock())
	switch sn := r.conv.spend; {
	case !r.app.budgetsRead:
		b.key = dayKey{app: r.app.Name, owner: r.owner, day: day}
		return nil
	case sn != nil && sn.seq == r.startSeq-1 && sn.key.day == day && sn.extensions == r.e.extensions.Load() && r.e.opts.Cluster == nil:
		b.key, b.stored, b.base, b.extensions = sn.key, sn.stored, sn.base, sn.extensions
		maps.Copy(b.session, sn.session)
		return nil
	}
	return r.readSpend(b, day)
}

// spendSnapshot is what a session's last run on this engine counted, as of the seq
// its run ended at.
type spendSnapshot struct {
	seq        int64
	extensions int64 // the engine's count of budget extensions then
	key        dayKey
	stored     projection.Spend
	base       map[string]events.BudgetAmounts
	session    map[string]events.BudgetAmounts
}

// keepSpend leaves what the run counted with the session's conversation, for its
// next turn on this engine.
func (r *run) keepSpend() {
	b := r.log.budget
	if b == nil || r.prefix != "" {
		return
	}
	last := r.log.last() // before b.mu: an append holds the log's lock, then b.mu
	b.mu.Lock()
	defer b.mu.Unlock()
	r.conv.spend = &spendSnapshot{seq: last, extensions: b.extensions, key: b.key, stored: b.stored, base: b.base, session: maps.Clone(b.session)}
}

// readSpend (re)reads the store's figures for day (b.mu held, or b not shared yet).
func (r *run) readSpend(b *turnBudget, day string) error {
	k := dayKey{app: r.app.Name, owner: r.owner, day: day}
	base := r.e.days.read(k) // before the read: a call counted in both is counted twice, never missed
	b.extensions = r.e.extensions.Load()
	s, err := r.e.store.Spend(r.ctx, projection.SpendQuery{Session: r.session, App: r.app.Name, Owner: r.owner, Day: day})
	if err != nil {
		return err
	}
	if b.key.day != "" { // the day turned: the session's calls since the first read are in this one
		clear(b.session)
	}
	b.key, b.stored, b.base = k, s, base
	r.followDay(b)
	return nil
}

// followDay has the session's appends read its owner's day spend, on several nodes
// whose store can (b.mu held, or b not shared yet).
func (r *run) followDay(b *turnBudget) {
	feed, ok := r.e.store.(DaySpendFeed)
	if !ok || r.e.opts.Cluster == nil || !r.app.dayBudgets {
		return
	}
	if b.unfollow != nil {
		b.unfollow()
	}
	b.fresh, b.unfollow = feed.FollowDaySpend(r.session, b.key.day)
}

// unfollowDay ends following the session's owner's day.
func (r *run) unfollowDay() {
	if b := r.log.budget; b != nil && r.prefix == "" {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.unfollow != nil {
			b.unfollow()
			b.unfollow, b.fresh = nil, nil
		}
	}
}

// noteSpend counts one model call at path of agent (replayed or made: the agent's
// own, its compaction, a guardrail judge's under the guardrail's name) to the turn,
// and, when the store did not have it when the run began, to the session; the
// engine's day tally counts it once its append commits (countDay), to day (the Day
// it records; "": the UTC day of the append).
func (r *run) noteSpend(typ, path, agent string, u events.Usage, cost float64, day string, stored bool) {
	b := r.log.budget
	if b == nil {
		return
	}
	a := spentAmounts(u, cost)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.turn[agent] = b.turn[agent].Add(a)
	if stored {
		return
	}
	b.session[agent] = b.session[agent].Add(a)
	if r.app.dayBudgets {
		if b.unrecorded == nil {
			b.unrecorded = map[string]daySpend{}
		}
		b.unrecorded[typ+"\x00"+path] = daySpend{agent: agent, amounts: a, day: day}
	}
}

// daySpend is a call's spend waiting for its append, and the day it records.
type daySpend struct {
	agent, day string
	amounts    events.BudgetAmounts
}

// countDay adds the model calls an append committed to the engine's day tally, each
// to the day the store counts it to: a call is in the store before any read of the
// tally can miss it, and one whose append failed is in neither (r.log.mu held).
func (r *run) countDay(appended []events.Event) {
	b := r.log.budget
	if b == nil || !r.app.dayBudgets {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ev := range appended {
		if ev.Type != events.TypeModelCalled && ev.Type != events.TypeContextCompacted {
			continue
		}
		k := ev.Type + "\x00" + ev.Path
		if p, ok := b.unrecorded[k]; ok {
			delete(b.unrecorded, k)
			r.e.days.add(dayKey{app: r.app.Name, owner: r.owner, day: projection.DayOf(p.day, ev.At)}, p.agent, p.amounts)
		}
	}
}

// spent is what scope has spent at level (for agent, at level agent), the day's with
// what this engine's day tally added since b read the store (b.mu held).
func (b *turnBudget) spent(days *dayTally, scope, level, agent string) events.BudgetAmounts {
	var sum events.BudgetAmounts
	add := func(by string, a events.BudgetAmounts) {
		if level == events.BudgetOfApp || by == agent {
			sum = sum.Add(a)
		}
	}
	switch scope {
	case events.BudgetTurn:
		for by, a := range b.turn {
			add(by, a)
		}
	case events.BudgetSession:
		for by, f := range b.stored.Session {
			add(by, spentAmounts(f.Usage, f.Cost))
		}
		for by, a := range b.session {
			add(by, a)
		}
	default:
		if b.fresh != nil {
			if figures, ok := b.fresh(); ok { // every node's, as of the session's latest append
				for by, f := range figures {
					add(by, spentAmounts(f.Usage, f.Cost))
				}
				break
			}
		}
		for by, f := range b.stored.Day {
			add(by, spentAmounts(f.Usage, f.Cost))
		}
		days.since(b.key, b.base, add)
	}
	sum.Cost = roundCost(sum.Cost)
	return sum
}

// extended is what people added to a budget (b.mu held).
func (b *turnBudget) extended(scope, level, agent string) events.BudgetAmounts {
	if scope == events.BudgetTurn {
		return b.turnExt[extKey(level, agent)]
	}
	var sum events.BudgetAmounts
	for _, x := range b.stored.Extensions {
		if x.Scope != scope || x.Level != level || (level == events.BudgetOfAgent && x.Agent != agent) ||
			(scope == events.BudgetUserDay && x.Day != b.key.day) {
			continue
		}
		sum = sum.Add(x.Amounts)
	}
	return sum
}
