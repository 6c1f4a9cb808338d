package undo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync"

	"github.com/turnlog/turnlog/events"
)

// Read reads r to its end as the undo log holds a content: its hash, its size and,
// when keep, its chunks with their bytes (without, the content is named only: a
// change past a cap).
func Read(r io.Reader, keep bool) (events.Content, error) {
	whole := sha256.New()
	var c events.Content
	err := Split(r, func(b []byte) error {
		whole.Write(b)
		c.Size += int64(len(b))
		if keep {
			c.Chunks = append(c.Chunks, events.Chunk{Hash: HashOf(b), Data: bytes.Clone(b)})
		}
		return nil
	})
	if err != nil {
		return events.Content{}, err
	}
	c.Hash = "sha256:" + hex.EncodeToString(whole.Sum(nil))
	return c, nil
}

// MaxWhole is the largest content ReadSized reads into one buffer; a larger one is
// read as Read does, a window at a time.
const MaxWhole = 4 << 20

// ReadSized is Read for a reader of size bytes (a file's, from its stat): a content
// of at most MaxWhole bytes is read whole into one buffer, hashed once (a content of
// one chunk is that chunk: one hash names both), and its chunks are pieces of that
// buffer; one not kept is only hashed. The chunks are those Read cuts. settled says
// nothing writes the reader's file (turnlog's own copy): its size is taken as its
// end.
func ReadSized(r io.Reader, size int64, keep, settled bool) (events.Content, error) {
	if !keep {
		h := sha256.New()
		buf := copyBuffers.Get().(*[]byte)
		n, err := io.CopyBuffer(h, onlyReader{r}, *buf)
		copyBuffers.Put(buf)
		if err != nil {
			return events.Content{}, err
		}
		return events.Content{Hash: "sha256:" + hex.EncodeToString(h.Sum(nil)), Size: n}, nil
	}
	if size < 0 || size > MaxWhole {
		return Read(r, keep)
	}
	// size bytes, then — unless the reader is known to hold no more (a file nobody
	// writes) — a read past them, which a reader of that size ends at once (one that
	// grew meanwhile is read on as Read reads it).
	buf := make([]byte, size)
	n, err := io.ReadFull(r, buf)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF: // shorter: it shrank meanwhile
	case err != nil:
		return events.Content{}, err
	case !settled:
		var one [1]byte
		if m, _ := r.Read(one[:]); m > 0 {
			return Read(io.MultiReader(bytes.NewReader(buf), bytes.NewReader(one[:m]), r), keep)
		}
	}
	data := buf[:n]
	c := events.Content{Hash: HashOf(data), Size: int64(n)}
	for off := 0; off < n; {
		end := off + cut(data[off:])
		ch := events.Chunk{Hash: c.Hash, Data: data[off:end:end]}
		if off > 0 || end < n {
			ch.Hash = HashOf(ch.Data)
		}
		c.Chunks = append(c.Chunks, ch)
		off = end
	}
	return c, nil
}

// copyBuffers are ReadSized's buffers for hashing.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// onlyReader hides a reader's WriterTo, so io.CopyBuffer uses the buffer.
type onlyReader struct{ io.Reader }
