package undo

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
)

// text is n bytes of lines of words, the same for a seed.
func text(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "line %d: %x %x\n", b.Len(), r.Uint64(), r.Uint32())
	}
	return b.Bytes()[:n]
}

func chunks(t *testing.T, data []byte) []string {
	t.Helper()
	var out []string
	var joined []byte
	err := Split(iotest.HalfReader(bytes.NewReader(data)), func(c []byte) error {
		out = append(out, HashOf(c))
		joined = append(joined, c...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(joined, data) {
		t.Fatalf("the chunks of %d bytes join to %d other bytes", len(data), len(joined))
	}
	return out
}

// TestChunksJoinToTheContentWithinTheirBounds: every content, empty to megabytes
// and read a few bytes at a time, is cut into chunks that join to it, each of
// MinChunk to MaxChunk bytes but the last, about AvgChunk on average.
func TestChunksJoinToTheContentWithinTheirBounds(t *testing.T) {
	for _, n := range []int{0, 1, MinChunk, MinChunk + 1, MaxChunk, MaxChunk + 1, 1 << 20, 3<<20 + 17} {
		data := text(uint64(n), n)
		var sizes []int
		Split(bytes.NewReader(data), func(c []byte) error { sizes = append(sizes, len(c)); return nil })
		for i, s := range sizes {
			if s > MaxChunk || s < MinChunk && i != len(sizes)-1 {
				t.Fatalf("%d bytes: chunk %d of %d holds %d", n, i, len(sizes), s)
			}
		}
		chunks(t, data)
		if n >= 1<<20 {
			if avg := n / len(sizes); avg < AvgChunk/2 || avg > 2*AvgChunk {
				t.Errorf("%d bytes: %d chunks of %d bytes on average", n, len(sizes), avg)
			}
		}
	}
	if got := chunks(t, bytes.Repeat([]byte{0}, 1<<20)); len(got) != 16 {
		t.Errorf("a megabyte of zeros is %d chunks, want 16 of MaxChunk", len(got))
	}
}

// TestAnEditMovesOnlyTheCutsNearIt: one line changed, inserted or removed in a
// megabyte leaves all chunks but the one or two around it as they were.
func TestAnEditMovesOnlyTheCutsNearIt(t *testing.T) {
	data := text(7, 1<<20)
	before := chunks(t, data)
	at := bytes.Index(data[500_000:], []byte("\n")) + 500_001
	end := at + bytes.IndexByte(data[at:], '\n') + 1
	edits := map[string][]byte{
		"changed":  concat(data[:at], []byte(strings.ToUpper(string(data[at:end]))), data[end:]),
		"inserted": concat(data[:at], []byte("a new line\n"), data[at:]),
		"removed":  concat(data[:at], data[end:]),
	}
	had := map[string]bool{}
	for _, h := range before {
		had[h] = true
	}
	for what, edited := range edits {
		after := chunks(t, edited)
		fresh := 0
		for _, h := range after {
			if !had[h] {
				fresh++
			}
		}
		if fresh == 0 || fresh > 2 {
			t.Errorf("a line %s: %d of %d chunks are new", what, fresh, len(after))
		}
	}
}

// TestTheCutsAreTheStoredFormat: the chunks of a fixed content are the same in
// every release (stored contents are found again by them).
func TestTheCutsAreTheStoredFormat(t *testing.T) {
	got := chunks(t, text(42, 200_000))
	const n = 22
	const first = "sha256:4a092c6411a7b7cb873cf96a5ba615a3aa880c31cac91ab5ffe2eb71a29bbf8b"
	const last = "sha256:6848e66b67b352f2a77a638852344733a482dca537454ec34f0cbcd439f0e5a5"
	if len(got) != n || got[0] != first || got[n-1] != last {
		t.Fatalf("%d chunks, first %s, last %s: the cuts moved", len(got), got[0], got[len(got)-1])
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestReadNamesTheWholeAndKeepsItsChunks: Read's hash is the whole content's, its
// chunks join to it, and without keep it names the content only.
func TestReadNamesTheWholeAndKeepsItsChunks(t *testing.T) {
	data := text(3, 300_000)
	c, err := Read(bytes.NewReader(data), true)
	if err != nil || c.Hash != HashOf(data) || c.Size != int64(len(data)) || len(c.Chunks) < 10 {
		t.Fatalf("%s %d %d chunks %v", c.Hash, c.Size, len(c.Chunks), err)
	}
	var joined []byte
	for _, ch := range c.Chunks {
		if HashOf(ch.Data) != ch.Hash {
			t.Fatalf("chunk %s holds other bytes", ch.Hash)
		}
		joined = append(joined, ch.Data...)
	}
	if !bytes.Equal(joined, data) {
		t.Fatal("the chunks do not join to the content")
	}
	named, err := Read(bytes.NewReader(data), false)
	if err != nil || named.Hash != c.Hash || named.Size != c.Size || named.Chunks != nil {
		t.Fatalf("named only: %+v %v", named, err)
	}
	if empty, _ := Read(bytes.NewReader(nil), true); empty.Hash != HashOf(nil) || empty.Size != 0 || len(empty.Chunks) != 0 {
		t.Fatalf("empty: %+v", empty)
	}
}

// TestReadSizedCutsAsReadDoes: a content read whole (ReadSized) has the hash, size
// and chunks a content read a window at a time (Read) has — small, one chunk, many,
// past MaxWhole, a size that was wrong — and one not kept is named the same.
func TestReadSizedCutsAsReadDoes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 9))
	for _, n := range []int{0, 1, MinChunk, 4096, 100_000, MaxWhole + 12345} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		want, err := Read(bytes.NewReader(data), true)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int64{int64(n), int64(n) / 2} { // the stat, or a stale one
			got, err := ReadSized(bytes.NewReader(data), size, true, false)
			if err != nil || got.Hash != want.Hash || got.Size != want.Size || len(got.Chunks) != len(want.Chunks) {
				t.Fatalf("%d bytes (size %d): %d chunks, %v; want %d", n, size, len(got.Chunks), err, len(want.Chunks))
			}
			for i := range got.Chunks {
				if got.Chunks[i].Hash != want.Chunks[i].Hash || !bytes.Equal(got.Chunks[i].Data, want.Chunks[i].Data) {
					t.Fatalf("%d bytes: chunk %d differs", n, i)
				}
			}
		}
		named, err := ReadSized(bytes.NewReader(data), int64(n), false, false)
		if err != nil || named.Hash != want.Hash || named.Size != want.Size || named.Chunks != nil {
			t.Fatalf("%d bytes not kept: %+v %v", n, named.Hash, err)
		}
	}
}
