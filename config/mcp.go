package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/mcpclient"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

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

// mcpTools connects to an app's MCP servers at load and adds their allowed tools to
// tools. A server that cannot be reached stops the load, naming it.
func (b builder) mcpTools(at string, c *MCP, mechanism string, tools map[string]fsm.Tool) error {
	if c == nil {
		return nil
	}
	pool := b.opts.MCP
	if pool == nil {
		pool = &mcpclient.Pool{}
	}
	for _, name := range sortedKeys(c.Servers) {
		here := at + ".servers." + name
		sc := c.Servers[name]
		if name == "" || strings.Contains(name, mcpclient.Separator) {
			return b.errAt(here, "a server name may not hold %q", mcpclient.Separator)
		}
		s := mcpclient.Server{Name: name, URL: sc.URL, Command: sc.Command, AllowedTools: sc.AllowedTools, HTTPClient: b.opts.HTTPClient}
		if sc.TimeoutSeconds < 0 {
			return b.errAt(here+".timeout_seconds", "must not be negative")
		}
		s.Timeout = time.Duration(sc.TimeoutSeconds) * time.Second
		if a := sc.Auth; a != nil {
			if a.Type != "bearer_env" {
				return b.errAt(here+".auth.type", "unknown auth type %q (bearer_env)", a.Type)
			}
			if s.BearerToken = os.Getenv(a.TokenEnv); a.TokenEnv == "" || s.BearerToken == "" {
				return b.errAt(here+".auth.token_env", "environment variable %q is empty", a.TokenEnv)
			}
			if sc.URL == "" {
				return b.errAt(here+".auth", "bearer tokens are for url servers")
			}
		}
		if len(sc.Command) > 0 {
			dir := sc.Dir
			switch {
			case dir == "":
				empty, err := os.MkdirTemp("", "turnlog-mcp-"+name+"-")
				if err != nil {
					return b.errAt(here, "a directory for the server: %v", err)
				}
				dir = empty
			case !filepath.IsAbs(dir):
				dir = filepath.Join(filepath.Dir(b.name), dir)
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return b.errAt(here+".dir", "%v", err)
			}
			if err := b.exposes(here+".dir", abs, "the server's directory"); err != nil {
				return err
			}
			s.Sandbox = sandbox.Spec{Workspace: abs, WorkspaceReadOnly: true, Network: sc.Network, Mechanism: mechanism}
		}
		found, err := pool.Connect(context.Background(), s)
		if err != nil {
			return b.errAt(here, "%v", err)
		}
		for _, t := range found {
			n := t.Spec().Name
			if _, taken := tools[n]; taken {
				return b.errAt(here, "tool %s is also a tool of the app", n)
			}
			tools[n] = t
		}
	}
	return nil
}
