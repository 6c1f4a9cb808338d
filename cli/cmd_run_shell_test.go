package cli

import (
	"testing"

	"github.com/turnlog/turnlog/events"
)

// TestDescribeShowsCompactionsAndSkills: the local shell prints a compaction and a
// skill load as they are committed.
func TestDescribeShowsCompactionsAndSkills(t *testing.T) {
	t.Parallel()
	for p, want := range map[events.Payload]string{
		&events.ContextCompacted{From: 0, Covers: 28, TokensBefore: 970, TokensAfter: 780}: "context: compacted items 0–28 into a summary (970 → 780 tokens)",
		&events.SkillLoaded{Name: "go-testing", Path: "skills/go-testing/SKILL.md"}:        "skill: loaded go-testing (skills/go-testing/SKILL.md)",
	} {
		if got := describe(events.MustNew("t", "p", p)); got != want {
			t.Errorf("%s: %q, want %q", p.EventType(), got, want)
		}
	}
}
