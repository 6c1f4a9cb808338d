package config

// Evidence is an agent's `require_evidence:` — true, or a mapping naming the tools
// that count and the note the model is told.
type Evidence struct {
	Enabled bool
	Tools   []string `yaml:"tools"`
	Note    string   `yaml:"note"`
}

// UnmarshalYAML reads `require_evidence: true` or `require_evidence: {tools, note}`.
func (e *Evidence) UnmarshalYAML(unmarshal func(any) error) error {
	var on bool
	if err := unmarshal(&on); err == nil {
		e.Enabled = on
		return nil
	}
	var full struct {
		Tools []string `yaml:"tools"`
		Note  string   `yaml:"note"`
	}
	if err := unmarshal(&full); err != nil {
		return err
	}
	e.Enabled, e.Tools, e.Note = true, full.Tools, full.Note
	return nil
}
