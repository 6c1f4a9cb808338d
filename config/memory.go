package config

import (
	"os"
	"time"

	"github.com/turnlog/turnlog/adapters/memory"
	"github.com/turnlog/turnlog/adapters/openai"
	"github.com/turnlog/turnlog/fsm"
)

// Memory is an agent's `memory:` — true, or a mapping with an embeddings provider.
type Memory struct {
	Enabled    bool
	Embeddings *Embeddings `yaml:"embeddings"`
}

// Embeddings is an OpenAI-compatible /embeddings endpoint for hybrid memory search.
type Embeddings struct {
	Model     string `yaml:"model"`
	BaseURL   string `yaml:"base_url"`
	APIKeyEnv string `yaml:"api_key_env"`
	Timeout   string `yaml:"timeout"`
}

// UnmarshalYAML reads `memory: true` or `memory: {embeddings: {...}}`.
func (m *Memory) UnmarshalYAML(unmarshal func(any) error) error {
	var on bool
	if err := unmarshal(&on); err == nil {
		m.Enabled = on
		return nil
	}
	var full struct {
		Embeddings *Embeddings `yaml:"embeddings"`
	}
	if err := unmarshal(&full); err != nil {
		return err
	}
	m.Enabled, m.Embeddings = true, full.Embeddings
	return nil
}

// memoryTools are the memory tools of an agent with memory, on the store the options
// give (unbound when there is none: a command that runs no turn).
func (b builder) memoryTools(at string, m *Memory) ([]fsm.Tool, error) {
	if m == nil || !m.Enabled {
		return nil, nil
	}
	var store memory.Store = &memory.Binding{}
	if b.opts.Memory != nil {
		store = b.opts.Memory
	}
	var emb memory.Embedder
	if e := m.Embeddings; e != nil {
		cfg := openai.Config{Model: e.Model, BaseURL: e.BaseURL, HTTPClient: b.opts.HTTPClient}
		if e.Model == "" {
			return nil, b.errAt(at+".embeddings.model", "is required")
		}
		if e.APIKeyEnv != "" {
			if cfg.APIKey = os.Getenv(e.APIKeyEnv); cfg.APIKey == "" {
				return nil, b.errAt(at+".embeddings.api_key_env", "environment variable %s is empty", e.APIKeyEnv)
			}
		}
		if e.Timeout != "" {
			d, err := time.ParseDuration(e.Timeout)
			if err != nil || d <= 0 {
				return nil, b.errAt(at+".embeddings.timeout", "must be a positive duration such as 10s; got %q", e.Timeout)
			}
			cfg.Timeout = d
		}
		client, err := openai.NewEmbedder(cfg)
		if err != nil {
			return nil, b.errAt(at+".embeddings", "%v", err)
		}
		emb = client
	}
	return memory.Tools(store, emb, time.Now), nil
}
