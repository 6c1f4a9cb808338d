package inspector

import (
	"bytes"
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/undo"
)

// What a turn page's Files section shows: the first maxListed paths of the turn,
// with a unified diff for text up to maxDiffSide bytes a side for the first
// maxDiffs (the rest, and every change whole, are at GET …/turns/{turn}/files). The
// undo log keeps the after side of those changes only (undo.DiffsShown).
const (
	maxDiffSide = undo.MaxDiffSide
	maxDiffs    = undo.DiffsShown
	maxListed   = 500
)

// fileCall is one call's recorded changes as the page shows them.
type fileCall struct {
	CallID  string
	Tool    string
	Changes []fileRow
	More    int // paths of the call past maxListed
}

// fileRow is one path a call changed.
type fileRow struct {
	Path          string
	What          string // made, removed, changed and how
	Diff          string
	Note          string // why there is no diff, or that it was cut
	NotRevertible string
}

// turnFiles are the changes the turn's calls recorded, with diffs from the
// contents the undo log holds.
func (s *Server) turnFiles(ctx context.Context, session string, evs []events.Event) ([]fileCall, error) {
	var out []fileCall
	diffs, listed := 0, 0
	for _, ev := range evs {
		if ev.Type != events.TypeFilesChanged {
			continue
		}
		fc, err := events.DecodeAs[*events.FilesChanged](ev)
		if err != nil {
			return nil, err
		}
		call := fileCall{CallID: fc.CallID, Tool: fc.Tool}
		for i, c := range fc.Changes {
			if listed == maxListed {
				call.More = len(fc.Changes) - i
				break
			}
			listed++
			row := fileRow{Path: c.Path, What: whatChanged(c), NotRevertible: c.NotRevertible}
			if undo.Diffable(c) {
				if diffs == maxDiffs {
					row.Note = fmt.Sprintf("diff not shown: a page shows the first %d (GET …/files has every change)", maxDiffs)
				} else {
					diffs++
					s.diffOf(ctx, session, c, &row)
				}
			}
			call.Changes = append(call.Changes, row)
		}
		out = append(out, call)
	}
	return out, nil
}

// diffOf sets row's diff of c, or says why it has none.
func (s *Server) diffOf(ctx context.Context, session string, c events.FileChange, row *fileRow) {
	var sides [2][]byte
	for i, st := range []*events.FileState{c.Before, c.After} {
		if st == nil {
			continue
		}
		if st.Size > maxDiffSide {
			row.Note = fmt.Sprintf("diff not shown: over %d KiB", maxDiffSide>>10)
			return
		}
		b, err := s.cfg.Reader.Content(ctx, session, st.Hash)
		if err != nil {
			row.Note = "diff not shown: the content is not kept (" + publicText(err) + ")"
			return
		}
		if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			row.Note = "binary"
			return
		}
		sides[i] = b
	}
	diff, cut := undo.Diff(c.Path, string(sides[0]), string(sides[1]))
	row.Diff = diff
	if cut {
		row.Note = "diff cut"
	}
}

// whatChanged says in words what became of a path.
func whatChanged(c events.FileChange) string {
	b, a := c.Before, c.After
	switch {
	case b == nil && a == nil:
		return "unchanged"
	case b == nil:
		return "made: " + stateText(a)
	case a == nil:
		return "removed: " + stateText(b)
	case b.Kind != a.Kind:
		return "was " + stateText(b) + ", now " + stateText(a)
	}
	var what string
	switch {
	case a.Kind == events.FileKindFile && b.Hash != a.Hash:
		what = fmt.Sprintf("changed: %d → %d bytes", b.Size, a.Size)
	case a.Kind == events.FileKindSymlink && b.Target != a.Target:
		what = "points at " + a.Target + " (was " + b.Target + ")"
	default:
		what = "changed"
	}
	if b.Mode != a.Mode {
		what += fmt.Sprintf(", mode %04o → %04o", b.Mode, a.Mode)
	}
	if b.UID != a.UID || b.GID != a.GID {
		what += fmt.Sprintf(", owner %d:%d → %d:%d", b.UID, b.GID, a.UID, a.GID)
	}
	return what
}

func stateText(st *events.FileState) string {
	switch st.Kind {
	case events.FileKindDir:
		return fmt.Sprintf("a directory (mode %04o)", st.Mode)
	case events.FileKindSymlink:
		return "a symlink to " + st.Target
	}
	return fmt.Sprintf("a file of %d bytes (mode %04o)", st.Size, st.Mode)
}
