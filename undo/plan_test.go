package undo

import (
	"testing"

	"github.com/turnlog/turnlog/events"
)

func file(hash string) *events.FileState {
	return &events.FileState{Kind: events.FileKindFile, Mode: 0o644, Hash: hash}
}

// TestAPlanPutsEachPathBackAsItFirstWas: over changes in order, a path goes back to
// its first before and is expected as its last after; one made and removed again
// is no target; a change that cannot be reverted is named once.
func TestAPlanPutsEachPathBackAsItFirstWas(t *testing.T) {
	changes := []events.FileChange{
		{Path: "a", Before: file("h1"), After: file("h2")},
		{Path: "tmp", Before: nil, After: file("t")},
		{Path: "a", Before: file("h2"), After: file("h3")},
		{Path: "tmp", Before: file("t"), After: nil},
		{Path: "big", Before: file("b1"), After: file("b2"), NotRevertible: "past a cap"},
		{Path: "big", Before: file("b2"), After: file("b3"), NotRevertible: "past a cap"},
		{Path: "new", After: file("n")},
	}
	targets, bad := Plan(changes)
	if len(targets) != 3 || targets[0].Path != "a" || targets[0].Want.Hash != "h1" || targets[0].Expect.Hash != "h3" ||
		targets[1].Path != "big" || targets[2].Path != "new" || targets[2].Want != nil || targets[2].Expect.Hash != "n" {
		t.Fatalf("%+v", targets)
	}
	if len(bad) != 1 || bad[0].Path != "big" {
		t.Fatalf("not revertible: %+v", bad)
	}
}
