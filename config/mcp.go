package config

// MCP is an app's `mcp:` section: servers whose tools agents may list as
// `<server>__<tool>`.
type MCP struct {
	Servers map[string]MCPServer `yaml:"servers"`
}

// MCPServer is one MCP server: a streamable HTTP `url`, or a stdio `command` that runs
// in the sandbox with `dir` (relative to this file) as its read-only workspace — by
// default an empty directory of its own: never the config's folder, which holds the
// config.
type MCPServer struct {
	URL            string   `yaml:"url"`
	Command        []string `yaml:"command"`
	Dir            string   `yaml:"dir"`
	Network        bool     `yaml:"network"` // a stdio server may reach the network
	AllowedTools   []string `yaml:"allowed_tools"`
	Auth           *MCPAuth `yaml:"auth"`
	TimeoutSeconds int      `yaml:"timeout_seconds"`
}

// MCPAuth is how turnlog authenticates to a URL server.
type MCPAuth struct {
	Type     string `yaml:"type"` // bearer_env
	TokenEnv string `yaml:"token_env"`
}
