package turnlog

import (
	"os"
	"time"

	"github.com/turnlog/turnlog/adapters/models/openai"
	"github.com/turnlog/turnlog/adapters/tools/memory"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/fsm"
)

// memoryTools are the memory tools of an agent with memory, on the store the options
// give (unbound when there is none: a command that runs no turn).
func (b builder) memoryTools(at string, m *config.Memory) ([]fsm.Tool, error) {
	if m == nil || !m.Enabled {
		return nil, nil
	}
	var store memory.Store = memory.NoStore{}
	if b.opts.Memory != nil {
		store = b.opts.Memory
	}
	var emb memory.Embedder
	if e := m.Embeddings; e != nil {
		cfg := openai.Config{Model: e.Model, BaseURL: e.BaseURL, HTTPClient: b.opts.HTTPClient}
		if e.Model == "" {
			return nil, b.doc.ErrAt(at+".embeddings.model", "is required")
		}
		if e.APIKeyEnv != "" {
			if cfg.APIKey = os.Getenv(e.APIKeyEnv); cfg.APIKey == "" && !b.opts.secretsOptional() { // embeds nothing
				return nil, b.doc.ErrAt(at+".embeddings.api_key_env", "environment variable %s is empty", e.APIKeyEnv)
			}
		}
		if e.Timeout != "" {
			d, err := time.ParseDuration(e.Timeout)
			if err != nil || d <= 0 {
				return nil, b.doc.ErrAt(at+".embeddings.timeout", "must be a positive duration such as 10s; got %q", e.Timeout)
			}
			cfg.Timeout = d
		}
		client, err := openai.NewEmbedder(cfg)
		if err != nil {
			return nil, b.doc.ErrAt(at+".embeddings", "%v", err)
		}
		emb = client
	}
	return memory.Tools(store, emb, time.Now), nil
}
