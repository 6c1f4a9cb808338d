package config

// Webhook is told of an app's turns: turnlog posts each event it asks for to URL,
// signed like an HTTP tool's call, at least once (a receiver deduplicates by the
// delivery id), retried with exponential backoff, then dead-lettered.
type Webhook struct {
	URL string `yaml:"url"`
	// Events are the kinds it is told of: turn.committed, turn.failed, turn.suspended
	// (waiting for a person), turn.canceled. Default: all of them.
	Events []string `yaml:"events"`
	// SecretEnv names the variable holding the signing secret (required),
	// NextSecretEnv the one being rotated in (both sign while both are set).
	SecretEnv     string `yaml:"secret_env"`
	NextSecretEnv string `yaml:"next_secret_env"`
	// Timeout is one attempt's (default 10s); Backoff the wait after the first failed
	// attempt (default 1s), doubled after each to MaxBackoff (default 10m);
	// MaxAttempts how many attempts before the delivery is dead (default 12).
	Timeout     string `yaml:"timeout"`
	Backoff     string `yaml:"backoff"`
	MaxBackoff  string `yaml:"max_backoff"`
	MaxAttempts int    `yaml:"max_attempts"`
}
