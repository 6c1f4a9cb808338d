package undo

import (
	"errors"
	"io"

	"github.com/turnlog/turnlog/events"
)

// Contents are cut where a rolling hash of the last bytes read (a gear hash: each
// byte shifts the hash left and adds the byte's entry of a fixed table) has its top
// bits zero — where depends only on the bytes around the cut, so an edit moves the
// cuts near it alone and every other chunk is the same as before. Chunks are at
// least MinChunk bytes (no cut is looked for before) and at most MaxChunk (cut
// there when none was found); the bits asked for make them about AvgChunk on
// average: more before AvgChunk, fewer after (normalised chunking), so sizes
// cluster near it.
const (
	MinChunk = 2 << 10
	AvgChunk = 8 << 10
	MaxChunk = 64 << 10
)

const (
	maskSmall = uint64(0xffff) << 48 // 16 bits before AvgChunk: a cut there is rarer
	maskLarge = uint64(0x3ff) << 54  // 10 bits after it: more likely
)

// gear is the hash's table: 256 values of a fixed splitmix64 sequence. It is part
// of the stored format: a different table cuts different chunks.
var gear = func() (t [256]uint64) {
	x := uint64(0x7475726e6c6f6721) // "turnlog!"
	for i := range t {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		t[i] = z ^ (z >> 31)
	}
	return t
}()

// cut is where the first chunk of data ends (data is at least MaxChunk bytes, or
// all there is).
func cut(data []byte) int {
	n := len(data)
	if n <= MinChunk {
		return n
	}
	if n > MaxChunk {
		n = MaxChunk
	}
	var h uint64
	i := MinChunk
	for ; i < n && i < AvgChunk; i++ {
		h = h<<1 + gear[data[i]]
		if h&maskSmall == 0 {
			return i + 1
		}
	}
	for ; i < n; i++ {
		h = h<<1 + gear[data[i]]
		if h&maskLarge == 0 {
			return i + 1
		}
	}
	return n
}

// Split reads r to its end and calls fn with each chunk in order (the slice is
// valid only during the call). Chunks concatenated are what r held; an empty r has
// no chunk.
func Split(r io.Reader, fn func(chunk []byte) error) error {
	buf := make([]byte, 2*MaxChunk)
	start, end := 0, 0
	eof := false
	for {
		for !eof && end-start < MaxChunk {
			if start > 0 && len(buf)-end < MaxChunk {
				end = copy(buf, buf[start:end])
				start = 0
			}
			n, err := r.Read(buf[end:])
			end += n
			if errors.Is(err, io.EOF) {
				eof = true
			} else if err != nil {
				return err
			}
		}
		if start == end {
			return nil
		}
		n := cut(buf[start:end])
		if err := fn(buf[start : start+n]); err != nil {
			return err
		}
		start += n
	}
}

// HashOf names a content or a chunk (events.HashOf).
func HashOf(data []byte) string { return events.HashOf(data) }
