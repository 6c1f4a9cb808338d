package fsm

import (
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// begin puts the turn's input in the conversation and drives the turn; a turn with
// no input is a compaction turn.
func (r *run) begin(input string) (*Result, error) {
	if input == "" {
		return r.driveCompaction()
	}
	if err := r.openTurn(input); err != nil {
		return nil, err
	}
	return r.drive()
}

// compactable says whether a compaction turn can run: the agent has a context window
// and something is not summarised yet.
func compactable(ag *Agent, f *agentFace, conv *conversation) error {
	if f.ctxm == nil {
		return events.Errorf(events.CodeInvalid, "agent %s has no context window to compact (context.window in agent.yaml)", ag.Name)
	}
	if v := conv.view(f.ctxm); v.Covered() >= len(conv.items)-conv.summariesSince(v.Covered()) {
		return events.Errorf(events.CodeConflict, "nothing to compact: every committed item is summarised already")
	}
	return nil
}

// driveCompaction summarises every committed item not summarised yet and commits the
// summary as the turn's only item. The summarising call is recorded like any model
// call, so a replay or a recovery reuses it.
func (r *run) driveCompaction() (*Result, error) {
	defer func() {
		if !r.committed {
			r.conv.truncate(r.base)
		}
	}()
	for _, t := range []Trigger{TriggerGuardInput, TriggerCallModel} {
		if err := r.fire(t); err != nil {
			return nil, err
		}
	}
	ag := r.agent
	path := r.prefix + fmt.Sprintf("%s/compact/1", ag.Name)
	f := r.face(ag)
	if f.ctxm == nil {
		return r.fail(events.CodeInvalid, fmt.Sprintf("agent %s has no context window to compact", ag.Name), path)
	}
	view := r.conv.view(f.ctxm)
	before, _ := view.Build(r.base)
	span := spanToCompact(view.Covered(), r.base)
	cc, fail := r.compaction(view, span, path)
	if fail != nil {
		return r.fail(fail.Code, fail.Message, fail.Path)
	}
	r.conv.append(summaryItem(ag.Name, cc))
	after, _ := view.Build(r.base)
	cc.TokensBefore, cc.TokensAfter = before.Needed, after.Tokens
	ev, err := events.New(r.turn, path, cc)
	if err != nil {
		return nil, err
	}
	for _, t := range []Trigger{TriggerGuardOutput, TriggerCommit} {
		if err := r.fire(t); err != nil {
			return nil, err
		}
	}
	items := append([]events.Item{}, r.conv.items[r.base:]...)
	done, err := events.New(r.turn, "", &events.TurnCommitted{Items: items, Agent: ag.Name, Usage: r.usage})
	if err != nil {
		return nil, err
	}
	if err := r.emit(ev, done); err != nil {
		return nil, err
	}
	r.committed = true
	r.e.remember(r.session, r.log.last(), r.conv)
	r.ended(StatusCompleted, "", "")
	return &Result{Session: r.session, TurnID: r.turn, Status: StatusCompleted, Items: items, Usage: r.usage, Agent: ag.Name}, nil
}
