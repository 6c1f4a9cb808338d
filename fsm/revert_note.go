package fsm

import (
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// A turn after a revert starts by telling the model what was reverted: a system
// message before the input, naming each revert since the conversation's last commit
// and the paths it put back (the first MaxListedRestored of each, and a count). It
// is derived from the log alone, so a resumed, recovered or replayed turn tells the
// same words, and it is committed with the turn's items.

// openTurn adds what the turn starts with to its conversation: the note of the
// reverts before it, if any, then its input — the same for a new, a resumed and a
// recovered turn.
func (r *run) openTurn(input string) error {
	note, err := r.revertNote()
	if err != nil {
		return err
	}
	if note != "" {
		r.conv.append(events.Item{Type: events.ItemMessage, Role: "system", Content: note})
	}
	r.conv.append(events.UserMessage(input))
	return nil
}

// revertNote is what the turn tells the model of the reverts before it ("": none).
// A turn that starts right after the last commit, or after the event that opened the
// session (seq 1), reads nothing.
func (r *run) revertNote() (string, error) {
	if r.startSeq <= max(r.lastCommit, 1)+1 {
		return "", nil
	}
	evs, err := r.e.store.Events(r.ctx, r.session, r.lastCommit)
	if err != nil {
		return "", err
	}
	var notes []string
	for _, ev := range evs {
		if ev.Seq >= r.startSeq {
			break
		}
		if ev.Type != events.TypeWorkspaceReverted {
			continue
		}
		wr, err := events.DecodeAs[*events.WorkspaceReverted](ev)
		if err != nil {
			return "", err
		}
		notes = append(notes, revertNoteOf(wr))
		if ws := r.app.Workspace; ws != nil {
			paths := make([]string, len(wr.Changes))
			for i, c := range wr.Changes {
				paths[i] = c.Path
			}
			ws.Unread(r.session, paths) // the node that reverted forgot them; this one may not have
		}
	}
	return strings.Join(notes, "\n\n"), nil
}

// RevertNotePrefix starts what a turn tells the model of a revert.
const RevertNotePrefix = "turnlog: files of the workspace were reverted since the last turn"

func revertNoteOf(wr *events.WorkspaceReverted) string {
	what := "an earlier revert (" + wr.Revert + ") was undone"
	if len(wr.Turns) > 0 {
		what = "the changes of turn " + strings.Join(wr.Turns, ", turn ") + " were undone"
	}
	paths := make([]string, 0, min(len(wr.Changes), MaxListedRestored))
	for _, c := range wr.Changes[:min(len(wr.Changes), MaxListedRestored)] {
		paths = append(paths, c.Path)
	}
	more := ""
	if n := len(wr.Changes) - len(paths); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("%s (revert %s, by %s): %s. It put back %d paths as they were: %s%s. What you read or wrote of them before is no longer what they hold: read a file again before you change it.",
		RevertNotePrefix, wr.RevertID, wr.By, what, len(wr.Changes), strings.Join(paths, ", "), more)
}
