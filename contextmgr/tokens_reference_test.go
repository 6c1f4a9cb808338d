package contextmgr

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// referenceCounts is tiktoken-go's EncodeOrdinary, the reference the counter must
// equal.
func referenceCounts(t testing.TB, encoding string) func(string) int {
	t.Helper()
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		t.Fatal(err)
	}
	return func(s string) int { return len(enc.EncodeOrdinary(s)) }
}

// alphabet holds runes of every class the expressions tell apart: ASCII letters of
// both cases and the contraction letters, digits, apostrophes, spaces, line breaks,
// tabs, '/', punctuation; titlecase, modifier and other letters, combining and
// spacing marks, numbers of every kind, non-ASCII spaces, symbols and emoji, a long
// s and a Kelvin sign (they fold to ASCII letters), and invalid UTF-8 bytes.
var alphabet = []string{
	"a", "b", "z", "A", "Q", "Z", "s", "t", "r", "e", "v", "m", "l", "d", "S", "T", "R", "E", "V", "M", "L", "D",
	"0", "7", "9", "'", "'", "'", " ", " ", " ", "  ", "\n", "\r", "\r\n", "\t", "\v", "\f", "/", ".", ",", "!", "?", "-", "_", "(", ")", "{", "}", "\"", ":", "=", "<|endoftext|>",
	"é", "É", "ß", "ǅ", "ʰ", "ˆ", "中", "文", "ا", "ب", "\u0301", "\u0903", "\u20dd", "٣", "Ⅻ", "½", "²",
	"\u00a0", "\u2028", "\u3000", "\u0085", "\u200b", "€", "©", "😀", "👍🏽", "ſ", "\u212a", "İ", "\xff", "\xc3", "\x80",
}

func randomText(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.IntN(40); n > 0; n-- {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// TestTheCounterCountsAsTiktoken: on random text over every class of rune the
// pre-tokenizing expressions tell apart, and on real documents and code, both
// encodings count exactly what tiktoken-go counts.
func TestTheCounterCountsAsTiktoken(t *testing.T) {
	t.Parallel()
	var docs []string
	for _, glob := range []string{"../docs/*.md", "../README.md", "*.go", "../events/*.go", "../fixtures/*/*.jsonl"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(raw))
		}
	}
	if len(docs) < 10 {
		t.Fatalf("only %d documents to count", len(docs))
	}
	for _, encoding := range []string{O200K, CL100K} {
		c, err := NewCounter(encoding)
		if err != nil {
			t.Fatal(err)
		}
		want := referenceCounts(t, encoding)
		rng := rand.New(rand.NewPCG(1, uint64(len(encoding))))
		for i := 0; i < 20000; i++ {
			s := randomText(rng)
			if got, w := c.Count(s), want(s); got != w {
				t.Fatalf("%s: %q counts %d, tiktoken %d", encoding, s, got, w)
			}
		}
		for _, d := range docs {
			if got, w := c.Count(d), want(d); got != w {
				t.Fatalf("%s: a document of %d bytes counts %d, tiktoken %d", encoding, len(d), got, w)
			}
		}
	}
}

// FuzzTheCounterCountsAsTiktoken compares the counter with tiktoken-go on any text.
func FuzzTheCounterCountsAsTiktoken(f *testing.F) {
	for _, s := range []string{"", "hello world", "It's   done.\r\n\n  x", "ǅungla ʰx 中文 ½ 😀", "\xff\xfe a"} {
		f.Add(s)
	}
	counters := map[string]*Counter{}
	refs := map[string]func(string) int{}
	for _, e := range []string{O200K, CL100K} {
		c, err := NewCounter(e)
		if err != nil {
			f.Fatal(err)
		}
		counters[e], refs[e] = c, referenceCounts(f, e)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for e, c := range counters {
			if got, w := c.Count(s), refs[e](s); got != w {
				t.Fatalf("%s: %q counts %d, tiktoken %d", e, s, got, w)
			}
		}
	})
}
