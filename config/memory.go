package config

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
