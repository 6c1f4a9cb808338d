package workspacetools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/sandbox"
	"github.com/turnlog/turnlog/undo"
)

// TestARecordKeepsEveryBeforeAndTheAftersADiffShows: a real command edits more files
// than a page shows diffs of, and makes one larger than a diff shows. The record
// keeps every content a revert puts back (each before side), names every after
// side by its true hash, and keeps an after side only for the first
// undo.DiffsShown changes that may be diffs, within undo.MaxDiffSide.
func TestARecordKeepsEveryBeforeAndTheAftersADiffShows(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	const files = undo.DiffsShown + 10
	for i := range files {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprintf("one %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("x", undo.MaxDiffSide+1)
	res, err := sandbox.Run(context.Background(), sandbox.Spec{Workspace: ws, Timeout: time.Minute, SettleLater: true, Mechanism: os.Getenv("TURNLOG_TEST_MECHANISM")},
		fmt.Sprintf("sed -i s/one/two/ f*.txt && head -c %d /dev/zero | tr '\\0' x > big.txt && chmod 600 f000.txt", len(big)))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	defer res.Settle(true)
	changes, contents, err := recordChanges(res, DefaultUndoCaps)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, c := range contents {
		kept[c.Hash] = true
	}
	diffable := 0
	for _, c := range changes {
		var want string
		if c.Path == "big.txt" {
			want = big
		} else {
			var i int
			fmt.Sscanf(c.Path, "f%d.txt", &i)
			want = fmt.Sprintf("two %d\n", i)
			if c.Before == nil || !kept[c.Before.Hash] || c.Before.Hash != events.HashOf([]byte(fmt.Sprintf("one %d\n", i))) {
				t.Errorf("%s: its before side %+v is not kept as it was", c.Path, c.Before)
			}
		}
		if c.After == nil || c.After.Hash != events.HashOf([]byte(want)) {
			t.Fatalf("%s: after %+v, want the hash of %.20q", c.Path, c.After, want)
		}
		if c.NotRevertible != "" {
			t.Errorf("%s: not revertible: %s", c.Path, c.NotRevertible)
		}
		if !undo.Diffable(c) {
			continue
		}
		diffable++
		shown := diffable <= undo.DiffsShown && c.After.Size <= undo.MaxDiffSide
		if kept[c.After.Hash] != shown {
			t.Errorf("%s (diff %d, %d bytes): after side kept %v, want %v", c.Path, diffable, c.After.Size, kept[c.After.Hash], shown)
		}
	}
	if diffable != files+1 {
		t.Errorf("%d changes may be diffs, want %d", diffable, files+1)
	}
}
