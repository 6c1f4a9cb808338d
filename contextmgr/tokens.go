package contextmgr

import (
	"fmt"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encodings turnlog counts with.
const (
	O200K  = "o200k_base"
	CL100K = "cl100k_base"
)

// Counter counts tokens in one encoding.
type Counter struct {
	Encoding string
	enc      *tiktoken.Tiktoken
}

var (
	loaderOnce sync.Once
	encMu      sync.Mutex
	encoders   = map[string]*Counter{}
)

// NewCounter returns the counter for an encoding (loaded once per process, from the
// offline tables: counting never touches the network).
func NewCounter(encoding string) (*Counter, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(loader.NewOfflineLoader()) })
	encMu.Lock()
	defer encMu.Unlock()
	if c, ok := encoders[encoding]; ok {
		return c, nil
	}
	if encoding != O200K && encoding != CL100K {
		return nil, fmt.Errorf("unknown token encoding %q (known: %s, %s)", encoding, O200K, CL100K)
	}
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("token encoding %s: %w", encoding, err)
	}
	c := &Counter{Encoding: encoding, enc: enc}
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
	return len(c.enc.EncodeOrdinary(s))
}
