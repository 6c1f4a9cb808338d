package contextmgr

import "math"

// bpe counts the tokens of a byte-pair encoding: text is cut into pieces
// (pretokenize.go); a piece that is a token is one, any other is merged byte by
// byte, the adjacent pair of lowest rank first (the leftmost among equals), until
// no adjacent pair is a token.
type bpe struct {
	ranks map[string]int
	piece splitter
}

func (b *bpe) count(s string) int {
	n := 0
	for i := 0; i < len(s); {
		end := b.piece(s, i)
		if _, ok := b.ranks[s[i:end]]; ok {
			n++
		} else {
			n += b.merged(s[i:end])
		}
		i = end
	}
	return n
}

// merged is how many tokens piece becomes.
func (b *bpe) merged(piece string) int {
	if len(piece) == 1 {
		return 1
	}
	// starts[k] is where part k begins (the last entry is len(piece)); rank[k] is the
	// rank of part k joined with part k+1 (none: math.MaxInt).
	var startsBuf, rankBuf [64]int
	starts, rank := startsBuf[:0], rankBuf[:0]
	for k := 0; k <= len(piece); k++ {
		starts = append(starts, k)
	}
	pairRank := func(k int) int {
		if k+2 < len(starts) {
			if r, ok := b.ranks[piece[starts[k]:starts[k+2]]]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for k := 0; k < len(starts)-1; k++ {
		rank = append(rank, pairRank(k))
	}
	for len(starts) > 2 {
		best, at := math.MaxInt, -1
		for k, r := range rank[:len(starts)-2] {
			if r < best {
				best, at = r, k
			}
		}
		if at < 0 {
			break
		}
		// Join parts at and at+1: drop the boundary between them.
		starts = append(starts[:at+1], starts[at+2:]...)
		rank = append(rank[:at+1], rank[at+2:]...)
		rank[at] = pairRank(at)
		if at > 0 {
			rank[at-1] = pairRank(at - 1)
		}
	}
	return len(starts) - 1
}
