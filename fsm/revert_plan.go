package fsm

import (
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// RevertRequest asks for a revert of a session's workspace files: of one turn
// (Turn), of every turn after one (ToTurn), or of an earlier revert (Revert) — one
// of the three. Force overwrites paths changed since; By is who asks.
type RevertRequest struct {
	Session string
	Turn    string
	ToTurn  string
	Revert  string
	By      string
	Force   bool
}

// revertSelection is what a revert undoes: the changes in the order they were made,
// and which turns or revert they are.
type revertSelection struct {
	changes    []events.FileChange
	turns      []string // newest first
	revert     string
	workspaces map[string]bool // the workspace folders the changes were recorded in
}

// sessionUndoLog is what a session's log holds of its files: each turn's changes,
// each revert and whether it stands.
type sessionUndoLog struct {
	turnOrder []string                       // turns in the order they started
	changes   map[string][]events.FileChange // by turn, in the order made
	reverts   map[string]*events.WorkspaceReverted
	undoneBy  map[string]string          // revert → the revert that undid it
	revertOf  map[string]string          // turn → the last revert that named it
	ended     map[string]bool            // turns committed, failed or canceled
	folders   map[string]map[string]bool // turn → the workspace folders its changes were in
}

func readUndoLog(evs []events.Event) (*sessionUndoLog, error) {
	l := &sessionUndoLog{changes: map[string][]events.FileChange{}, reverts: map[string]*events.WorkspaceReverted{},
		undoneBy: map[string]string{}, revertOf: map[string]string{}, ended: map[string]bool{}, folders: map[string]map[string]bool{}}
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeTurnStarted:
			l.turnOrder = append(l.turnOrder, ev.Turn)
		case events.TypeTurnCommitted, events.TypeTurnFailed, events.TypeTurnCanceled:
			l.ended[ev.Turn] = true
		case events.TypeFilesChanged:
			fc, err := events.DecodeAs[*events.FilesChanged](ev)
			if err != nil {
				return nil, err
			}
			l.changes[ev.Turn] = append(l.changes[ev.Turn], fc.Changes...)
			if l.folders[ev.Turn] == nil {
				l.folders[ev.Turn] = map[string]bool{}
			}
			l.folders[ev.Turn][fc.Workspace] = true
		case events.TypeWorkspaceReverted:
			wr, err := events.DecodeAs[*events.WorkspaceReverted](ev)
			if err != nil {
				return nil, err
			}
			l.reverts[wr.RevertID] = wr
			if wr.Revert != "" {
				l.undoneBy[wr.Revert] = wr.RevertID
			}
			for _, t := range wr.Turns {
				l.revertOf[t] = wr.RevertID
			}
		}
	}
	return l, nil
}

// stands says whether a revert's changes are in force: it was not undone by a
// revert that stands.
func (l *sessionUndoLog) stands(revert string) bool {
	for seen := 0; seen <= len(l.reverts); seen++ {
		by, ok := l.undoneBy[revert]
		if !ok {
			return seen%2 == 0
		}
		revert = by
	}
	return false
}

// reverted is the standing revert that undid turn, or "".
func (l *sessionUndoLog) reverted(turn string) string {
	if id := l.revertOf[turn]; id != "" && l.stands(id) {
		return id
	}
	return ""
}

// selectRevert decides what req undoes. Errors: invalid (not one of turn, to_turn
// and revert), not_found, conflict (already undone, or nothing to undo).
func (l *sessionUndoLog) selectRevert(req RevertRequest) (revertSelection, error) {
	given := 0
	for _, s := range []string{req.Turn, req.ToTurn, req.Revert} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return revertSelection{}, events.FieldError(events.CodeInvalid, "to_turn", "a revert names one turn, every turn after one (to_turn), or one revert")
	}
	started := map[string]int{}
	for i, t := range l.turnOrder {
		started[t] = i
	}
	switch {
	case req.Revert != "":
		wr, ok := l.reverts[req.Revert]
		if !ok {
			return revertSelection{}, events.Errorf(events.CodeNotFound, "session %s has no revert %s", req.Session, req.Revert)
		}
		if !l.stands(req.Revert) {
			return revertSelection{}, events.Errorf(events.CodeConflict, "revert %s was undone already (by %s)", req.Revert, l.undoneBy[req.Revert])
		}
		return revertSelection{changes: wr.Changes, revert: req.Revert, workspaces: map[string]bool{wr.Workspace: true}}, nil
	case req.Turn != "":
		if _, ok := started[req.Turn]; !ok {
			return revertSelection{}, events.Errorf(events.CodeNotFound, "session %s has no turn %s", req.Session, req.Turn)
		}
		if by := l.reverted(req.Turn); by != "" {
			return revertSelection{}, events.Errorf(events.CodeConflict, "turn %s was reverted already (by %s)", req.Turn, by)
		}
		if !l.ended[req.Turn] {
			return revertSelection{}, events.Errorf(events.CodeConflict, "turn %s has not ended (it runs, or waits for people): it is reverted once it has", req.Turn)
		}
		if len(l.changes[req.Turn]) == 0 {
			return revertSelection{}, events.Errorf(events.CodeConflict, "turn %s changed no files turnlog recorded: there is nothing to revert", req.Turn)
		}
		return revertSelection{changes: l.changes[req.Turn], turns: []string{req.Turn}, workspaces: l.folders[req.Turn]}, nil
	}
	from, ok := started[req.ToTurn]
	if !ok {
		return revertSelection{}, events.Errorf(events.CodeNotFound, "session %s has no turn %s", req.Session, req.ToTurn)
	}
	sel := revertSelection{workspaces: map[string]bool{}}
	for _, t := range l.turnOrder[from+1:] {
		if !l.ended[t] {
			return revertSelection{}, events.Errorf(events.CodeConflict, "turn %s has not ended (it runs, or waits for people): the turns after %s are reverted once it has", t, req.ToTurn)
		}
		if len(l.changes[t]) == 0 || l.reverted(t) != "" {
			continue
		}
		sel.changes = append(sel.changes, l.changes[t]...)
		sel.turns = append([]string{t}, sel.turns...)
		for f := range l.folders[t] {
			sel.workspaces[f] = true
		}
	}
	return sel, nil // no turns: nothing to revert
}

// notRevertibleError names the paths a revert cannot put back.
func notRevertibleError(bad []events.FileChange) error {
	msg := fmt.Sprintf("%d paths cannot be put back, so nothing was:", len(bad))
	for i, c := range bad {
		if i == 10 {
			msg += fmt.Sprintf(" and %d more", len(bad)-i)
			break
		}
		msg += fmt.Sprintf(" %s (%s);", c.Path, c.NotRevertible)
	}
	return events.Errorf(events.CodeConflict, "%s", msg)
}
