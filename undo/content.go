package undo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"

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
