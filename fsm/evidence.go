package fsm

import (
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// EvidenceRule is an agent's require_evidence: an answer given in a turn in which no
// tool brought anything back — none of Tools, when it names some — is held back and
// the model told Note, once; the second such answer stands, marked by an
// AnswerWithoutEvidence event. Only a call that succeeded and acts on something
// counts: a failed call (denied, rejected, invalid, timed out, an unknown tool), a
// handoff, a skill load and a call that acts on nothing (update_plan) fetched nothing.
type EvidenceRule struct {
	Tools []string
	Note  string // "": DefaultEvidenceNote
}

// DefaultEvidenceNote is what the model is told of an answer without evidence.
const DefaultEvidenceNote = "turnlog: your answer was held back: you answered without calling a tool in this turn, so nothing in it rests on data you fetched. Call a tool to get what the question needs, then answer from its output."

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

// countEvidence notes the calls of a response that brought something back and so may
// back an answer.
func (r *run) countEvidence(slots []*toolSlot) {
	for _, s := range slots {
		if s.derived || s.result == nil || s.result.IsError || actsOnNothing(s) {
			continue
		}
		if r.evidence == nil {
			r.evidence = map[string]bool{}
		}
		r.evidence[s.call.Name] = true
	}
}

// actsOnNothing says a call tells the policy it touches nothing: it can have fetched
// nothing either (update_plan).
func actsOnNothing(s *toolSlot) bool {
	pt, ok := s.tool.(PolicyTarget)
	if !ok {
		return false
	}
	pc := pt.PolicyCall(s.args)
	return pc.Shell == "" && pc.Level == 0 && len(pc.Actions) == 0 && len(pc.Resources) == 0
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

// checkEvidence decides the agent's answer under its require_evidence: nil when it
// stands unmarked; else the AnswerWithoutEvidence to record, and whether the answer is
// held back and the model called again (the agent's first such answer in the run:
// then the note has joined the conversation).
func (r *run) checkEvidence() (*events.Event, bool) {
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
		// The answer is held back (its ModelCalled keeps it): it joins no
		// conversation, so no later request or history carries what no output
		// guardrail saw; the model is told why.
		p.Action, p.Note = events.EvidenceSentBack, rule.note()
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
