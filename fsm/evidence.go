package fsm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// EvidenceRule is an agent's require_evidence: an answer given in a turn in which no
// tool ran — none of Tools, when it names some — goes back to the model once with
// Note; the second such answer stands, marked by an AnswerWithoutEvidence event.
// Calls the policy denied or a person rejected, handoffs and skill loads do not count
// as run: they fetched nothing.
type EvidenceRule struct {
	Tools []string
	Note  string // "": DefaultEvidenceNote
}

// DefaultEvidenceNote is what the model is told of an answer without evidence.
const DefaultEvidenceNote = "turnlog: you answered without calling a tool in this turn, so nothing in your answer rests on data you fetched. Call a tool to get what the question needs, then answer from its output."

// note is what the model is told.
func (e *EvidenceRule) note() string {
	switch {
	case e.Note != "":
		return e.Note
	case len(e.Tools) > 0:
		return DefaultEvidenceNote + " The tools that count: " + strings.Join(e.Tools, ", ") + "."
	}
	return DefaultEvidenceNote
}

// noEvidenceKinds are the results of calls that fetched nothing.
var noEvidenceKinds = []string{ToolDeniedKind, "rejected", ToolErrReplayOnly}

// countEvidence notes the calls of a response that ran and so may back an answer.
func (r *run) countEvidence(slots []*toolSlot) {
	for _, s := range slots {
		if s.derived || s.result == nil || (s.result.IsError && slices.Contains(noEvidenceKinds, s.result.ErrorKind)) {
			continue
		}
		if r.evidence == nil {
			r.evidence = map[string]bool{}
		}
		r.evidence[s.call.Name] = true
	}
}

// hasEvidence says whether a tool that counts for rule ran in this run.
func (r *run) hasEvidence(rule *EvidenceRule) bool {
	if len(rule.Tools) == 0 {
		return len(r.evidence) > 0
	}
	for _, t := range rule.Tools {
		if r.evidence[t] {
			return true
		}
	}
	return false
}

// checkEvidence decides the agent's answer text under its require_evidence: nil when
// it stands unmarked; else the AnswerWithoutEvidence to record, and whether the answer
// goes back to the model (the agent's first such answer in the run: then the answer
// and the note have joined the conversation).
func (r *run) checkEvidence(text string) (*events.Event, bool) {
	rule := r.agent.RequireEvidence
	if rule == nil || r.hasEvidence(rule) {
		return nil, false
	}
	if r.evidenceChecks == nil {
		r.evidenceChecks = map[string]int{}
	}
	r.evidenceChecks[r.agent.Name]++
	n := r.evidenceChecks[r.agent.Name]
	path := r.prefix + fmt.Sprintf("%s/evidence/%d", r.agent.Name, n)
	p := &events.AnswerWithoutEvidence{Agent: r.agent.Name, Action: events.EvidenceStood, Tools: rule.Tools}
	again := n == 1
	if again {
		p.Action, p.Note = events.EvidenceSentBack, rule.note()
		r.conv.append(events.AssistantMessage(r.agent.Name, text))
		r.conv.append(events.Item{Type: events.ItemMessage, Role: "system", Content: p.Note})
	}
	ev := events.MustNew(r.turn, path, p)
	if !r.rec.has(events.TypeAnswerWithoutEvidence, path) { // a live decision, not one re-derived after a restart
		app := ""
		if r.app != nil {
			app = r.app.Name
		}
		r.e.opts.Observer.AnswerWithoutEvidence(app, r.agent.Name, !again)
	}
	return &ev, again
}

// holdsForEvidence says the agent's text may not stream yet: it must pass the
// evidence check first.
func (r *run) holdsForEvidence() bool {
	return r.agent.RequireEvidence != nil && !r.hasEvidence(r.agent.RequireEvidence)
}
