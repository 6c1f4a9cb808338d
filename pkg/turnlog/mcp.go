package turnlog

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/mcpclient"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

// mcpTools connects to an app's MCP servers at load and adds their allowed tools to
// tools. A server that cannot be reached stops the load, naming it.
func (b builder) mcpTools(at string, c *config.MCP, mechanism string, tools map[string]fsm.Tool) error {
	if c == nil {
		return nil
	}
	pool := b.mcp
	for _, name := range config.SortedKeys(c.Servers) {
		here := at + ".servers." + name
		sc := c.Servers[name]
		if name == "" || strings.Contains(name, mcpclient.Separator) {
			return b.doc.ErrAt(here, "a server name may not hold %q", mcpclient.Separator)
		}
		s := mcpclient.Server{Name: name, URL: sc.URL, Command: sc.Command, AllowedTools: sc.AllowedTools, HTTPClient: b.opts.HTTPClient}
		if sc.TimeoutSeconds < 0 {
			return b.doc.ErrAt(here+".timeout_seconds", "must not be negative")
		}
		s.Timeout = time.Duration(sc.TimeoutSeconds) * time.Second
		if a := sc.Auth; a != nil {
			if a.Type != "bearer_env" {
				return b.doc.ErrAt(here+".auth.type", "unknown auth type %q (bearer_env)", a.Type)
			}
			if s.BearerToken = os.Getenv(a.TokenEnv); a.TokenEnv == "" || s.BearerToken == "" {
				return b.doc.ErrAt(here+".auth.token_env", "environment variable %q is empty", a.TokenEnv)
			}
			if sc.URL == "" {
				return b.doc.ErrAt(here+".auth", "bearer tokens are for url servers")
			}
		}
		if len(sc.Command) > 0 {
			dir := sc.Dir
			switch {
			case dir == "":
				empty, err := os.MkdirTemp("", "turnlog-mcp-"+name+"-")
				if err != nil {
					return b.doc.ErrAt(here, "a directory for the server: %v", err)
				}
				dir = empty
			case !filepath.IsAbs(dir):
				dir = filepath.Join(b.doc.Dir(), dir)
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return b.doc.ErrAt(here+".dir", "%v", err)
			}
			if err := b.exposes(here+".dir", abs, "the server's directory"); err != nil {
				return err
			}
			s.Sandbox = sandbox.Spec{Workspace: abs, WorkspaceReadOnly: true, Network: sc.Network, Mechanism: mechanism}
		}
		found, err := pool.Connect(b.ctx, s)
		if err != nil {
			return b.doc.ErrAt(here, "%v", err)
		}
		for _, t := range found {
			n := t.Spec().Name
			if _, taken := tools[n]; taken {
				return b.doc.ErrAt(here, "tool %s is also a tool of the app", n)
			}
			tools[n] = t
		}
	}
	return nil
}
