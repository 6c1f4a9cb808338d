package turnlog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/mcpclient"
	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// mcpTools connects to an app's MCP servers at load and adds their allowed tools to
// tools. A server that cannot be reached stops the load, naming it.
func (b builder) mcpTools(at, app string, c *config.MCP, access *policy.Engine, tools map[string]fsm.Tool, listed []string) error {
	if c == nil {
		return nil
	}
	if b.opts.ReadOnly { // the apps of a reader start no server: its tools are known by name
		for _, name := range config.SortedKeys(c.Servers) {
			for _, n := range listed {
				if strings.HasPrefix(n, name+mcpclient.Separator) {
					tools[n] = &replayTool{spec: fsm.ToolSpec{Name: n, Parameters: json.RawMessage(`{"type":"object"}`)}}
				}
			}
		}
		return nil
	}
	if b.opts.ReplayOnly { // a replay-only engine starts no server: its tools are the snapshot's
		for _, name := range config.SortedKeys(c.Servers) {
			for _, n := range config.SortedKeys(b.opts.Snapshot) {
				if strings.HasPrefix(n, name+mcpclient.Separator) {
					if _, taken := tools[n]; taken {
						return b.doc.ErrAt(at+".servers."+name, "tool %s is also a tool of the app", n)
					}
					tools[n] = fromSnapshot(b.opts.Snapshot[n])
				}
			}
		}
		return nil
	}
	pool := b.mcp
	for _, name := range config.SortedKeys(c.Servers) {
		here := at + ".servers." + name
		sc := c.Servers[name]
		if name == "" || strings.Contains(name, mcpclient.Separator) {
			return b.doc.ErrAt(here, "a server name may not hold %q", mcpclient.Separator)
		}
		if len(sc.Command) > 0 && (!safeName.MatchString(name) || !safeName.MatchString(app)) {
			return b.doc.ErrAt(here, "the app's and the server's names make its data directory's path: letters, digits, - and _ only (%q, %q)", app, name)
		}

		s := mcpclient.Server{Name: name, URL: sc.URL, Command: append([]string{}, sc.Command...), AllowedTools: sc.AllowedTools, HTTPClient: b.opts.HTTPClient}
		switch {
		case sc.Timeout != "" && sc.TimeoutSeconds != 0:
			return b.doc.ErrAt(here+".timeout_seconds", "is the old spelling of timeout: give one of them")
		case sc.TimeoutSeconds < 0:
			return b.doc.ErrAt(here+".timeout_seconds", "must not be negative")
		case sc.Timeout != "":
			d, err := b.duration(here+".timeout", sc.Timeout, "30s")
			if err != nil {
				return err
			}
			s.Timeout = d
		default:
			s.Timeout = time.Duration(sc.TimeoutSeconds) * time.Second
		}
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
			*b.folders = append(*b.folders, sandboxFolder{at: here, dir: abs, what: "the server's directory"})
			spec, err := b.serverSandbox(here, app, name, sc, abs, access)
			if err != nil {
				return err
			}
			s.Sandbox = spec
			for i, arg := range s.Command {
				s.Command[i] = strings.ReplaceAll(arg, dataDirRef, spec.DataDir)
			}
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

// dataDirRef stands for a stdio server's data directory in its command and env.
const dataDirRef = "${data_dir}"

// serverSandbox is where a stdio server runs: its folder read-only, its data
// directory read-write (made for it, owned by the sandbox's uid), the environment its
// config names, and the app's network — none, the allowlist proxy (the hosts allow
// rules name, for every tool or with the server's name in tools:) or the machine's.
func (b builder) serverSandbox(at, app, name string, sc config.MCPServer, dir string, access *policy.Engine) (sandbox.Spec, error) {
	spec := sandbox.Spec{Workspace: dir, WorkspaceReadOnly: true, Network: sc.Network, NeverDial: b.opts.NeverDial}
	state, err := b.opts.stateDir()
	if err != nil {
		return spec, b.doc.ErrAt(at, "a data directory for the server: %v", err)
	}
	data := filepath.Join(state, "mcp", app, name)
	if err := sandbox.PrepareDataDir(data); err != nil {
		return spec, b.doc.ErrAt(at, "the server's data directory %s: %v", data, err)
	}
	spec.DataDir = data
	for i, kv := range sc.Env {
		k, v, literal := strings.Cut(kv, "=")
		if !envName.MatchString(k) || strings.HasPrefix(k, "TURNLOG_") || k == "HOME" {
			return spec, b.doc.ErrAt(fmt.Sprintf("%s.env[%d]", at, i), "%q is not a variable a server may be given", k)
		}
		if !literal {
			var ok bool
			if v, ok = os.LookupEnv(k); !ok {
				return spec, b.doc.ErrAt(fmt.Sprintf("%s.env[%d]", at, i), "environment variable %s is not set", k)
			}
		}
		spec.Env = append(spec.Env, k+"="+strings.ReplaceAll(v, dataDirRef, data))
	}
	if access != nil {
		spec.Mechanism = access.Mechanism
		switch access.EffectiveNetwork() {
		case policy.NetworkHost:
			spec.Network = true
		case policy.NetworkAllowlist:
			if !sc.Network {
				spec.AllowHost = workspacetools.AllowHost(access, name) // rules name the server in tools:
			}
		}
	}
	return spec, nil
}

var (
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
)
