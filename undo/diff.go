package undo

import (
	"fmt"
	"strings"
)

// maxDiffLines caps a diff's output; maxDiffCells caps the work of computing one.
const (
	maxDiffLines = 400
	maxDiffCells = 4_000_000
)

// Diff is a line diff of old → new in unified style (without hunk context merging:
// each changed run is shown with its line numbers). cut says it was capped.
func Diff(path, old, new string) (string, bool) {
	a, b := splitLines(old), splitLines(new)
	var out []string
	out = append(out, "--- a/"+path, "+++ b/"+path)
	if len(a)*len(b) > maxDiffCells {
		out = append(out, fmt.Sprintf("@@ whole file: %d lines → %d lines @@", len(a), len(b)))
		return strings.Join(out, "\n") + "\n", true
	}
	// LCS table from the end.
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	var hunk []string
	hi, hj := 0, 0
	flush := func() {
		if len(hunk) > 0 {
			out = append(out, fmt.Sprintf("@@ -%d +%d @@", hi+1, hj+1))
			out = append(out, hunk...)
			hunk = nil
		}
	}
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			flush()
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			if len(hunk) == 0 {
				hi, hj = i, j
			}
			hunk = append(hunk, "-"+a[i])
			i++
		default:
			if len(hunk) == 0 {
				hi, hj = i, j
			}
			hunk = append(hunk, "+"+b[j])
			j++
		}
	}
	flush()
	cut := false
	if len(out) > maxDiffLines {
		out, cut = append(out[:maxDiffLines], fmt.Sprintf("… %d more diff lines", len(out)-maxDiffLines)), true
	}
	return strings.Join(out, "\n") + "\n", cut
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
