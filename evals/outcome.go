package evals

import (
	"encoding/json"
	"fmt"
	"path"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
)

// outcome is what a run's log shows — the same whether the run just ended or is read
// back from a recording: the last turn's answer, whether every turn completed and how
// the others ended, the calls that ran, the guardrails that tripped, the files the
// run changed, and what its model calls spent.
type outcome struct {
	answer    string
	completed bool
	ended     []string // a turn that failed or was canceled, in words
	calls     []toolCall
	tripped   []string
	changed   []string // workspace paths that differ from before the run
	usage     events.Usage
	cost      float64
}

type toolCall struct {
	name string
	args json.RawMessage
}

// neverRan are the error kinds of a call that did not run: refused, malformed, of a
// tool the agent lacks, or stopped before it began.
var neverRan = map[string]bool{fsm.ToolDeniedKind: true, "rejected": true, fsm.ToolErrInvalidArguments: true, fsm.ToolErrUnknownTool: true,
	fsm.SkillRefusedKind: true, fsm.ToolErrBranchFiles: true, fsm.ToolErrReplayOnly: true}

// turnEnd is how one turn of a run ended.
type turnEnd struct {
	input  string
	status string // "" while it has not ended; completed, failed, canceled
	output string
	why    string
}

// observe reads a run's events.
func observe(evs []events.Event) outcome {
	var o outcome
	asked := map[string]toolCall{} // call id → as the model asked
	var order []string             // turns, as they started
	turns := map[string]*turnEnd{}
	files := fileChanges{}
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeTurnStarted:
			if ts, err := events.DecodeAs[*events.TurnStarted](ev); err == nil && turns[ev.Turn] == nil {
				order, turns[ev.Turn] = append(order, ev.Turn), &turnEnd{input: ts.Input}
			}
		case events.TypeTurnCommitted:
			if tc, err := events.DecodeAs[*events.TurnCommitted](ev); err == nil && turns[ev.Turn] != nil {
				turns[ev.Turn].status, turns[ev.Turn].output = "completed", tc.Output
			}
		case events.TypeTurnFailed:
			if tf, err := events.DecodeAs[*events.TurnFailed](ev); err == nil && turns[ev.Turn] != nil {
				turns[ev.Turn].status, turns[ev.Turn].why = "failed", fmt.Sprintf("%s: %s", tf.ErrorCode, tf.Message)
			}
		case events.TypeTurnCanceled:
			if tc, err := events.DecodeAs[*events.TurnCanceled](ev); err == nil && turns[ev.Turn] != nil {
				turns[ev.Turn].status, turns[ev.Turn].why = "canceled", tc.Reason
			}
		case events.TypeModelCalled:
			if mc, err := events.DecodeAs[*events.ModelCalled](ev); err == nil {
				o.usage, o.cost = o.usage.Add(mc.Usage), o.cost+mc.Cost
				for _, tc := range mc.Response.ToolCalls {
					asked[tc.ID] = toolCall{name: tc.Name, args: tc.Arguments}
				}
			}
		case events.TypeContextCompacted:
			if cc, err := events.DecodeAs[*events.ContextCompacted](ev); err == nil {
				o.usage, o.cost = o.usage.Add(cc.Usage), o.cost+cc.Cost
			}
		case events.TypeToolResulted:
			tr, err := events.DecodeAs[*events.ToolResulted](ev)
			if err != nil || neverRan[tr.ErrorKind] {
				continue
			}
			call, ok := asked[tr.CallID]
			if !ok {
				call = toolCall{name: tr.Tool}
			}
			o.calls = append(o.calls, call)
		case events.TypeGuardrailTripped:
			if gt, err := events.DecodeAs[*events.GuardrailTripped](ev); err == nil {
				o.tripped = append(o.tripped, gt.Name)
			}
		case events.TypeFilesChanged:
			if fc, err := events.DecodeAs[*events.FilesChanged](ev); err == nil {
				files.add(fc.Changes)
			}
		case events.TypeWorkspaceReverted:
			if wr, err := events.DecodeAs[*events.WorkspaceReverted](ev); err == nil {
				files.add(wr.Changes)
			}
		}
	}
	o.completed = len(order) > 0
	for _, id := range order {
		t := turns[id]
		o.answer = t.output // the last turn's, "" unless it completed
		if t.status != "completed" {
			o.completed = false
		}
		if t.status == "failed" || t.status == "canceled" {
			o.ended = append(o.ended, fmt.Sprintf("turn %q ended %s: %s", t.input, t.status, t.why))
		}
	}
	o.changed = files.changed()
	return o
}

// fileChanges is each path's state before the run's first change of it and after
// its last.
type fileChanges struct {
	order  []string
	before map[string]*events.FileState
	after  map[string]*events.FileState
}

func (f *fileChanges) add(changes []events.FileChange) {
	if f.before == nil {
		f.before, f.after = map[string]*events.FileState{}, map[string]*events.FileState{}
	}
	for _, c := range changes {
		p := path.Clean(c.Path)
		if _, seen := f.before[p]; !seen {
			f.order, f.before[p] = append(f.order, p), c.Before
		}
		f.after[p] = c.After
	}
}

// changed are the paths whose state after the run is not what it was before: made,
// removed, or of another content, kind or target.
func (f *fileChanges) changed() []string {
	var out []string
	for _, p := range f.order {
		b, a := f.before[p], f.after[p]
		same := b == nil && a == nil ||
			b != nil && a != nil && b.Kind == a.Kind && b.Hash == a.Hash && b.Size == a.Size && b.Target == a.Target
		if !same {
			out = append(out, p)
		}
	}
	return out
}
