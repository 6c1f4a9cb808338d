package contextmgr

import (
	"unicode"
	"unicode/utf8"
)

// A byte-pair encoding first cuts text into pieces with a regular expression, then
// merges each piece's bytes. The expressions of o200k_base and cl100k_base need
// backtracking and a look-ahead, which a general engine runs slowly; the scanners
// here match exactly what those expressions match (leftmost alternative first,
// greedy quantifiers giving back what a later part needs), one rune at a time.
//
// o200k_base, alternatives in order:
//
//	A1 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	A2 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	A3 \p{N}{1,3}
//	A4  ?[^\s\p{L}\p{N}]+[\r\n/]*
//	A5 \s*[\r\n]+
//	A6 \s+(?!\S)
//	A7 \s+
//
// cl100k_base: (?i:'s|'t|'re|'ve|'m|'ll|'d), [^\r\n\p{L}\p{N}]?\p{L}+, \p{N}{1,3},
// " ?[^\s\p{L}\p{N}]+[\r\n]*", then A5–A7.

// splitter returns the end of the piece that starts at i (i < len(s); s is valid
// UTF-8). Every rune starts some piece, so the end is always past i.
type splitter func(s string, i int) int

func runeAt(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

// isLowerish is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}

// isLead is [^\r\n\p{L}\p{N}]: what may stand before a word.
func isLead(r rune) bool { return r != '\r' && r != '\n' && !isLetter(r) && !isNumber(r) }

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool { return !isSpace(r) && !isLetter(r) && !isNumber(r) }

// run returns the end of the longest run of runes from i that in accepts.
func run(s string, i int, in func(rune) bool) int {
	for i < len(s) {
		r, n := runeAt(s, i)
		if !in(r) {
			break
		}
		i += n
	}
	return i
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or i.
func contraction(s string, i int) int {
	if i >= len(s) || s[i] != '\'' {
		return i
	}
	lower := func(j int) (rune, int) {
		if j >= len(s) {
			return 0, 0
		}
		r, n := runeAt(s, j)
		return unicode.ToLower(r), n
	}
	r1, n1 := lower(i + 1)
	switch r1 {
	case 's', 't', 'm', 'd':
		return i + 1 + n1
	case 'r', 'v':
		if r2, n2 := lower(i + 1 + n1); r2 == 'e' {
			return i + 1 + n1 + n2
		}
	case 'l':
		if r2, n2 := lower(i + 1 + n1); r2 == 'l' {
			return i + 1 + n1 + n2
		}
	}
	return i
}

// withLead tries body after an optional lead rune at i (with it first, as the greedy
// ? does), returning the end or -1.
func withLead(s string, i int, body func(j int) int) int {
	if r, n := runeAt(s, i); isLead(r) {
		if end := body(i + n); end >= 0 {
			return end
		}
	}
	return body(i)
}

// o200kWord is U*L+ from j: the upper-ish run, then the lower-ish run after it; when
// none follows, the run gives back up to its last lower-ish rune (-1: there is none).
func o200kWord(s string, j int) int {
	k, lastLower := j, -1
	for k < len(s) {
		r, n := runeAt(s, k)
		if !isUpperish(r) {
			break
		}
		k += n
		if isLowerish(r) {
			lastLower = k
		}
	}
	if end := run(s, k, isLowerish); end > k {
		return end
	}
	return lastLower
}

// o200kCapital is U+L* from j (-1: no upper-ish rune there).
func o200kCapital(s string, j int) int {
	k := run(s, j, isUpperish)
	if k == j {
		return -1
	}
	return run(s, k, isLowerish)
}

func o200kPiece(s string, i int) int {
	if end := withLead(s, i, func(j int) int { return o200kWord(s, j) }); end >= 0 {
		return contraction(s, end)
	}
	if end := withLead(s, i, func(j int) int { return o200kCapital(s, j) }); end >= 0 {
		return contraction(s, end)
	}
	return commonTail(s, i, func(r rune) bool { return r == '\r' || r == '\n' || r == '/' })
}

func cl100kPiece(s string, i int) int {
	if end := contraction(s, i); end > i {
		return end
	}
	letters := func(j int) int {
		if end := run(s, j, isLetter); end > j {
			return end
		}
		return -1
	}
	if end := withLead(s, i, letters); end >= 0 {
		return end
	}
	return commonTail(s, i, func(r rune) bool { return r == '\r' || r == '\n' })
}

// commonTail is the alternatives both encodings end with: up to three numbers; an
// optional space, symbols and what may follow them (after); whitespace that ends in
// a line break; whitespace but the last before a non-space; any whitespace.
func commonTail(s string, i int, after func(rune) bool) int {
	r, n := runeAt(s, i)
	if isNumber(r) {
		end := i + n
		for k := 1; k < 3 && end < len(s); k++ {
			r, n := runeAt(s, end)
			if !isNumber(r) {
				break
			}
			end += n
		}
		return end
	}
	j := i
	if r == ' ' {
		j++
	}
	if k := run(s, j, isSymbol); k > j {
		return run(s, k, after)
	}
	e := run(s, i, isSpace) // from here on, s[i] is whitespace
	for k := e - 1; k >= i; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	if e == len(s) {
		return e
	}
	if _, last := utf8.DecodeLastRuneInString(s[i:e]); e-last > i {
		return e - last
	}
	return e
}
