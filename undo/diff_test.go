package undo_test

import (
	"testing"

	"github.com/turnlog/turnlog/undo"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ old, new, want string }{
		{"", "a\n", "@@ -1 +1 @@\n+a\n"},
		{"a\n", "", "@@ -1 +1 @@\n-a\n"},
		{"a\nb\nc\n", "a\nB\nc\n", "@@ -2 +2 @@\n-b\n+B\n"},
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\nc\nd\n", "b\nc\nd\ne\n", "@@ -1 +1 @@\n-a\n@@ -5 +4 @@\n+e\n"},
	} {
		got, _ := undo.Diff("f", tc.old, tc.new)
		if want := "--- a/f\n+++ b/f\n" + tc.want; got != want {
			t.Errorf("%q → %q:\n%s\nwant\n%s", tc.old, tc.new, got, want)
		}
	}
}
