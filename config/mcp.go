package config

// MCP is an app's `mcp:` section: servers whose tools agents may list as
// `<server>__<tool>`.
type MCP struct {
	Servers map[string]MCPServer `yaml:"servers"`
}

// MCPServer is one MCP server: a streamable HTTP `url`, or a stdio `command` that runs
// in the sandbox with `dir` (relative to this file) as its read-only workspace — by
// default an empty directory of its own: never the config's folder, which holds the
// config. A stdio server also gets a data directory of its own, read-write and kept
// across restarts (<state dir>/mcp/<app>/<server>; HOME and TURNLOG_DATA_DIR name it,
// and ${data_dir} in command and env stands for it), and the app's network setting.
type MCPServer struct {
	URL     string   `yaml:"url"`
	Command []string `yaml:"command"`
	Dir     string   `yaml:"dir"`
	// Env is what a stdio server gets of the environment, nothing else: NAME takes
	// the value turnlog has, NAME=VALUE sets it (${data_dir} expanded).
	Env []string `yaml:"env"`
	// Network: true gives a stdio server the machine's network whatever the app's
	// policy says (otherwise it has the policy's: none, the allowlist proxy, or host).
	Network      bool     `yaml:"network"`
	AllowedTools []string `yaml:"allowed_tools"`
	Auth         *MCPAuth `yaml:"auth"`
	// Timeout bounds connecting, listing and each call (default 30s).
	Timeout string `yaml:"timeout"`
	// TimeoutSeconds is Timeout's old spelling, a number of seconds.
	TimeoutSeconds int `yaml:"timeout_seconds"`
}

// MCPAuth is how turnlog authenticates to a URL server.
type MCPAuth struct {
	Type     string `yaml:"type"` // bearer_env
	TokenEnv string `yaml:"token_env"`
}
