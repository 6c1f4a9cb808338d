package contextmgr

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encodings turnlog counts with.
const (
	O200K  = "o200k_base"
	CL100K = "cl100k_base"
)

// Counter counts tokens in one encoding, as tiktoken's EncodeOrdinary would (the
// same ranks, pieces cut by scanners equal to its expressions: bpe.go).
type Counter struct {
	Encoding string
	bpe      bpe
}

var (
	encMu    sync.Mutex
	encoders = map[string]*Counter{}
)

// rankFiles names each encoding's ranks as the offline tables know them.
var rankFiles = map[string]string{
	O200K:  "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
	CL100K: "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}

// NewCounter returns the counter for an encoding (loaded once per process, from the
// offline tables: counting never touches the network).
func NewCounter(encoding string) (*Counter, error) {
	encMu.Lock()
	defer encMu.Unlock()
	if c, ok := encoders[encoding]; ok {
		return c, nil
	}
	if encoding != O200K && encoding != CL100K {
		return nil, fmt.Errorf("unknown token encoding %q (known: %s, %s)", encoding, O200K, CL100K)
	}
	ranks, err := loader.NewOfflineLoader().LoadTiktokenBpe(rankFiles[encoding])
	if err != nil {
		return nil, fmt.Errorf("token encoding %s: %w", encoding, err)
	}
	c := &Counter{Encoding: encoding, bpe: bpe{ranks: ranks, piece: o200kPiece}}
	if encoding == CL100K {
		c.bpe.piece = cl100kPiece
	}
	encoders[encoding] = c
	return c, nil
}

// EncodingFor picks a model's encoding: cl100k_base for the GPT-3.5 and GPT-4
// families (not GPT-4o or 4.1), o200k_base for everything else.
func EncodingFor(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case strings.HasPrefix(m, "gpt-3.5"), strings.HasPrefix(m, "gpt-4") && !strings.HasPrefix(m, "gpt-4o") && !strings.HasPrefix(m, "gpt-4.1") && !strings.HasPrefix(m, "gpt-4.5"),
		strings.HasPrefix(m, "text-embedding-3"), strings.HasPrefix(m, "text-embedding-ada"):
		return CL100K
	}
	return O200K
}

// Count is the number of tokens in s.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // each invalid byte counts as U+FFFD, as tiktoken reads it
	}
	return c.bpe.count(s)
}
