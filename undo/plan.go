package undo

import "github.com/turnlog/turnlog/events"

// Target is one path a revert puts back: Want is what it was before the changes
// undone (nil: nothing), Expect what they left (nil: nothing) — what must still be
// there for the revert to go ahead.
type Target struct {
	Path   string
	Want   *events.FileState
	Expect *events.FileState
}

// Plan is what undoing changes takes, given in the order they were made: each path
// as it was before the first change of it and as the last one left it, in the order
// the paths were first changed; a path made and removed again is left out. Changes
// that cannot be reverted (FileChange.NotRevertible) are returned apart, the first
// of each path: with any, the revert cannot be whole.
func Plan(changes []events.FileChange) (targets []Target, notRevertible []events.FileChange) {
	at := map[string]int{}
	bad := map[string]bool{}
	for _, c := range changes {
		if c.NotRevertible != "" && !bad[c.Path] {
			bad[c.Path] = true
			notRevertible = append(notRevertible, c)
		}
		if i, ok := at[c.Path]; ok {
			targets[i].Expect = c.After
			continue
		}
		at[c.Path] = len(targets)
		targets = append(targets, Target{Path: c.Path, Want: c.Before, Expect: c.After})
	}
	kept := targets[:0]
	for _, t := range targets {
		if t.Want != nil || t.Expect != nil {
			kept = append(kept, t)
		}
	}
	return kept, notRevertible
}
