package config

// Tool is one tool of an app: a Go function the binary offers (function, or the
// tool's own name), an HTTP endpoint (url) or a program (command).
type Tool struct {
	Function string `yaml:"function"`
	// url: turnlog posts the arguments there (see docs/tools.md).
	URL string `yaml:"url"`
	// command: a program run in the sandbox, arguments on stdin, output on stdout;
	// paths relative to this file.
	Command []string `yaml:"command"`
	// Dir is a command tool's folder (relative to this file), the only one it sees,
	// read-only; by default the folder of the program or script it names.
	Dir string `yaml:"dir"`
	// Env names the environment variables a command tool gets from turnlog's.
	Env []string `yaml:"env"`
	// Description and Parameters (a JSON schema, inline or a file relative to this
	// file) are what the model sees of an HTTP or command tool.
	Description string `yaml:"description"`
	Parameters  any    `yaml:"parameters"`
	// Headers are sent with each HTTP call; ${NAME} in a value is the environment
	// variable NAME.
	Headers map[string]string `yaml:"headers"`
	// SecretEnv names the variable holding the signing secret, NextSecretEnv the one
	// being rotated in (both sign while both are set).
	SecretEnv     string `yaml:"secret_env"`
	NextSecretEnv string `yaml:"next_secret_env"`
	// Dedupe: idempotency_key says the receiver applies each Idempotency-Key once, so
	// a call may be sent again — on errors and after a crash — with the same key.
	Dedupe           string `yaml:"dedupe"`
	TotalTimeout     string `yaml:"total_timeout"`
	MaxAttempts      int    `yaml:"max_attempts"`
	MaxResponseBytes int64  `yaml:"max_response_bytes"`

	Idempotent bool   `yaml:"idempotent"`
	Timeout    string `yaml:"timeout"`
	MaxCalls   int    `yaml:"max_calls"`
	ShowErrors *bool  `yaml:"show_errors"`
	// NeedsApproval suspends a turn before the tool runs until a person answers.
	NeedsApproval bool `yaml:"needs_approval"`
	// ExpiresIn rejects an approval nobody gave in time (e.g. 30m).
	ExpiresIn string `yaml:"expires_in"`
}

// DedupeIdempotencyKey is the one dedupe promise a receiver can make.
const DedupeIdempotencyKey = "idempotency_key"
