package undo

import "github.com/turnlog/turnlog/events"

// Where a person is shown a diff of a call's changes (the inspector's turn page),
// and so where the undo log keeps a change's after side: a revert needs only the
// before side (what it puts back), and a revert of a revert takes the after side
// from the revert's own record, read as the revert replaces it.
const (
	// DiffsShown is how many changes of a turn a page shows a diff of: the first
	// that Diffable says may have one.
	DiffsShown = 50
	// MaxDiffSide is the largest content a diff is shown of.
	MaxDiffSide = 256 << 10
)

// Diffable says whether a change may be shown as a diff of text: a file or nothing
// on each side, and not the same content on both.
func Diffable(c events.FileChange) bool {
	for _, st := range []*events.FileState{c.Before, c.After} {
		if st != nil && st.Kind != events.FileKindFile {
			return false
		}
	}
	if c.Before == nil && c.After == nil {
		return false
	}
	return c.Before == nil || c.After == nil || c.Before.Hash != c.After.Hash
}
