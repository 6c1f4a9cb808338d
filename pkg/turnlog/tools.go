package turnlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/tools/commandtool"
	"github.com/turnlog/turnlog/adapters/tools/httptool"
	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

func (b builder) tool(at, name string, c config.Tool, app config.App) (fsm.Tool, error) {
	kinds := 0
	for _, set := range []bool{c.Function != "", c.URL != "", len(c.Command) > 0} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return nil, b.doc.ErrAt(at, "a tool is one of function, url or command")
	}
	var base fsm.Tool
	var err error
	switch {
	case b.opts.ReplayOnly && (c.URL != "" || len(c.Command) > 0):
		base, err = b.replayOnlyTool(at, name, c)
	case c.URL != "":
		base, err = b.httpTool(at, name, c)
	case len(c.Command) > 0:
		base, err = b.commandTool(at, name, c, app)
	default:
		base, err = b.functionTool(at, name, c)
	}
	if err != nil {
		return nil, err
	}
	return b.configure(at, name, base, c)
}

// configure gives a tool the settings agent.yaml declares for it.
func (b builder) configure(at, name string, base fsm.Tool, c config.Tool) (fsm.Tool, error) {
	var err error
	spec := base.Spec()
	spec.Name = name
	spec.Idempotent = spec.Idempotent || c.Idempotent
	if c.ShowErrors != nil {
		spec.ShowErrors = *c.ShowErrors
	}
	spec.NeedsApproval = c.NeedsApproval
	if c.ExpiresIn != "" {
		d, err := b.duration(at+".expires_in", c.ExpiresIn, "30m")
		if err != nil {
			return nil, err
		}
		if !c.NeedsApproval {
			return nil, b.doc.ErrAt(at+".expires_in", "goes only with needs_approval: true")
		}
		spec.ExpiresIn = d
	}
	if c.MaxCalls < 0 {
		return nil, b.doc.ErrAt(at+".max_calls", "must not be negative")
	}
	spec.MaxCalls = c.MaxCalls
	if c.Timeout != "" && c.URL == "" {
		if spec.Timeout, err = b.duration(at+".timeout", c.Timeout, "2s"); err != nil {
			return nil, err
		}
	}
	if _, ok := base.(fsm.PolicyTarget); ok {
		return &configuredTarget{configuredTool{Tool: base, spec: spec}}, nil
	}
	return &configuredTool{Tool: base, spec: spec}, nil
}

func (b builder) duration(at, s, example string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, b.doc.ErrAt(at, "must be a positive duration such as %s, got %q", example, s)
	}
	return d, nil
}

// onlySettings refuses the fields of HTTP and command tools in the entry of a tool
// that only takes settings (a Go function, a built-in).
func (b builder) onlySettings(at string, c config.Tool, why string) error {
	for _, f := range []setField{{"description", c.Description != ""}, {"parameters", c.Parameters != nil}, {"headers", c.Headers != nil}, {"secret_env", c.SecretEnv != ""}, {"next_secret_env", c.NextSecretEnv != ""}, {"dedupe", c.Dedupe != ""}, {"total_timeout", c.TotalTimeout != ""}, {"max_attempts", c.MaxAttempts != 0}, {"max_response_bytes", c.MaxResponseBytes != 0}, {"dir", c.Dir != ""}, {"env", c.Env != nil}} {
		field, set := f.name, f.set
		if set {
			return b.doc.ErrAt(at+"."+field, "%s", why)
		}
	}
	return nil
}

// functionTool is a Go function the binary offers.
func (b builder) functionTool(at, name string, c config.Tool) (fsm.Tool, error) {
	if err := b.onlySettings(at, c, "is for HTTP (url) or command tools; a Go function tool declares its own"); err != nil {
		return nil, err
	}
	fn := c.Function
	if fn == "" {
		fn = name
	}
	base, ok := b.opts.Functions[fn]
	if s, recorded := b.opts.Snapshot[name]; !ok && recorded && b.opts.ReplayOnly {
		base, ok = fromSnapshot(s), true // another program's function, as the recording knew it
	}
	if !ok {
		return nil, b.doc.ErrAt(at+".function", "no function tool %q in this binary (known: %s); a tool of your own can be an HTTP endpoint (url:) or a program (command:), see docs/tools.md", fn, strings.Join(config.SortedKeys(b.opts.Functions), ", "))
	}
	return base, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// httpTool is an HTTP endpoint.
func (b builder) httpTool(at, name string, c config.Tool) (fsm.Tool, error) {
	for _, f := range []setField{{"dir", c.Dir != ""}, {"env", c.Env != nil}} {
		field, set := f.name, f.set
		if set {
			return nil, b.doc.ErrAt(at+"."+field, "is for command tools")
		}
	}
	if c.Description == "" {
		return nil, b.doc.ErrAt(at+".description", "is required: it is what the model knows of the tool")
	}
	hc := httptool.Config{Name: name, Description: c.Description, URL: c.URL, MaxAttempts: c.MaxAttempts, MaxResponseBytes: c.MaxResponseBytes,
		Transport: b.opts.HTTPTransport}
	var err error
	if hc.Parameters, err = b.parameters(at+".parameters", c.Parameters); err != nil {
		return nil, err
	}
	if len(c.Headers) > 0 {
		hc.Headers = map[string]string{}
	}
	for _, h := range config.SortedKeys(c.Headers) {
		v := c.Headers[h]
		var missing string
		hc.Headers[h] = envRef.ReplaceAllStringFunc(v, func(ref string) string {
			name := envRef.FindStringSubmatch(ref)[1]
			val := os.Getenv(name)
			if val == "" && missing == "" {
				missing = name
			}
			return val
		})
		if missing != "" && !b.opts.secretsOptional() {
			return nil, b.doc.ErrAt(at+".headers."+h, "environment variable %s is empty", missing)
		}
	}
	if hc.Secrets, err = b.secrets(at, c.SecretEnv, c.NextSecretEnv); err != nil {
		return nil, err
	}
	switch c.Dedupe {
	case "", config.DedupeIdempotencyKey:
	default:
		return nil, b.doc.ErrAt(at+".dedupe", "unknown dedupe %q (idempotency_key: the receiver applies each Idempotency-Key once)", c.Dedupe)
	}
	hc.Retry = c.Idempotent || c.Dedupe == config.DedupeIdempotencyKey
	if c.MaxAttempts < 0 || (c.MaxAttempts > 1 && !hc.Retry) {
		return nil, b.doc.ErrAt(at+".max_attempts", "a call is sent more than once only for a tool that is idempotent or dedupes by idempotency_key")
	}
	if c.MaxResponseBytes < 0 {
		return nil, b.doc.ErrAt(at+".max_response_bytes", "must not be negative")
	}
	if c.Timeout != "" {
		if hc.Timeout, err = b.duration(at+".timeout", c.Timeout, "10s"); err != nil {
			return nil, err
		}
	}
	if c.TotalTimeout != "" {
		if hc.TotalTimeout, err = b.duration(at+".total_timeout", c.TotalTimeout, "1m"); err != nil {
			return nil, err
		}
	}
	t, err := httptool.New(hc)
	if err != nil {
		field, msg, ok := strings.Cut(err.Error(), ": ")
		if ok && !strings.Contains(field, " ") {
			return nil, b.doc.ErrAt(at+"."+field, "%s", msg)
		}
		return nil, b.doc.ErrAt(at, "%v", err)
	}
	return t, nil
}

// parameters reads a tool's JSON schema: inline YAML, or the path of a JSON file
// relative to this file.
func (b builder) parameters(at string, v any) (json.RawMessage, error) {
	var raw []byte
	switch p := v.(type) {
	case nil:
		return json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`), nil
	case string:
		path := p
		if !filepath.IsAbs(path) {
			path = filepath.Join(b.doc.Dir(), path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, b.doc.ErrAt(at, "the schema file: %v", err)
		}
		if !json.Valid(data) {
			return nil, b.doc.ErrAt(at, "the schema file %s is not JSON", p)
		}
		raw = data
	default:
		data, err := json.Marshal(p)
		if err != nil {
			return nil, b.doc.ErrAt(at, "%v", err)
		}
		raw = data
	}
	canon, err := events.Canonicalize(raw)
	if err != nil {
		var ce *events.CanonicalError
		if errors.As(err, &ce) {
			return nil, b.doc.ErrAt(at, "%s: %s", ce.Path, ce.Reason)
		}
		return nil, b.doc.ErrAt(at, "%v", err)
	}
	return canon, nil
}

// configuredTool is a tool with the settings agent.yaml gives it.
type configuredTool struct {
	fsm.Tool
	spec fsm.ToolSpec
}

func (t *configuredTool) Spec() fsm.ToolSpec { return t.spec }

// configuredTarget is a configured tool that tells the policy what a call acts on.
type configuredTarget struct{ configuredTool }

func (t *configuredTarget) PolicyCall(args json.RawMessage) fsm.PolicyCall {
	return t.Tool.(fsm.PolicyTarget).PolicyCall(args)
}

// ValidateArguments passes a reviewer's edited arguments to the tool's own check.
func (t *configuredTool) ValidateArguments(args json.RawMessage) error {
	if v, ok := t.Tool.(fsm.ArgumentsValidator); ok {
		return v.ValidateArguments(args)
	}
	return nil
}

// commandTool is a program run in the sandbox, its folder the only one it sees.
func (b builder) commandTool(at, name string, c config.Tool, app config.App) (fsm.Tool, error) {
	for _, f := range []setField{{"headers", c.Headers != nil}, {"secret_env", c.SecretEnv != ""}, {"next_secret_env", c.NextSecretEnv != ""}, {"dedupe", c.Dedupe != ""}, {"total_timeout", c.TotalTimeout != ""}, {"max_attempts", c.MaxAttempts != 0}} {
		field, set := f.name, f.set
		if set {
			return nil, b.doc.ErrAt(at+"."+field, "is for HTTP (url) tools")
		}
	}
	if c.Description == "" {
		return nil, b.doc.ErrAt(at+".description", "is required: it is what the model knows of the tool")
	}
	base := b.doc.Dir()
	argv := append([]string{}, c.Command...)
	dir := c.Dir
	for i, arg := range argv {
		if arg == "" {
			return nil, b.doc.ErrAt(fmt.Sprintf("%s.command[%d]", at, i), "is empty")
		}
		if filepath.IsAbs(arg) || (i == 0 && !strings.Contains(arg, "/")) {
			continue // a path already, or a program found on PATH
		}
		p := filepath.Join(base, arg)
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, b.doc.ErrAt(fmt.Sprintf("%s.command[%d]", at, i), "%v", err)
		}
		argv[i] = abs
		if dir == "" {
			dir = filepath.Dir(abs)
		}
	}
	switch {
	case dir == "":
		empty, err := os.MkdirTemp("", "turnlog-tool-"+name+"-")
		if err != nil {
			return nil, b.doc.ErrAt(at, "a folder for the tool: %v", err)
		}
		dir = empty
	case !filepath.IsAbs(dir):
		dir = filepath.Join(base, dir)
	}
	dirAt := at + ".dir"
	if c.Dir == "" {
		dirAt = at + ".command" // the folder is the program's
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, b.doc.ErrAt(dirAt, "%v", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, b.doc.ErrAt(dirAt, "the tool's folder %s is not a directory", abs)
	}
	if err := b.ownFolder(dirAt, abs); err != nil {
		return nil, err
	}
	*b.folders = append(*b.folders, sandboxFolder{at: at + ".command", dir: abs, what: "the tool's folder"})
	spec := sandbox.Spec{Workspace: abs, WorkspaceReadOnly: true, NeverDial: b.opts.NeverDial}
	if app.Policy != nil {
		access, err := b.doc.Access(at, app.Policy, b.opts.Workspace)
		if err != nil {
			return nil, err
		}
		spec.Mechanism = access.Mechanism
		switch access.EffectiveNetwork() {
		case policy.NetworkHost:
			spec.Network = true
		case policy.NetworkAllowlist:
			spec.AllowHost = workspacetools.AllowHost(access, name)
		}
	}
	for i, v := range c.Env {
		here := fmt.Sprintf("%s.env[%d]", at, i)
		if !envName.MatchString(v) || strings.HasPrefix(v, "TURNLOG_") || v == "HOME" {
			return nil, b.doc.ErrAt(here, "%q is not a variable a tool may be given (a name; its value comes from turnlog's environment)", v)
		}
		val, ok := os.LookupEnv(v)
		if !ok && b.opts.secretsOptional() {
			continue
		}
		if !ok {
			return nil, b.doc.ErrAt(here, "environment variable %s is not set", v)
		}
		spec.Env = append(spec.Env, v+"="+val)
	}
	if c.Timeout != "" {
		if spec.Timeout, err = b.duration(at+".timeout", c.Timeout, "30s"); err != nil {
			return nil, err
		}
	}
	params, err := b.parameters(at+".parameters", c.Parameters)
	if err != nil {
		return nil, err
	}
	t, err := commandtool.New(commandtool.Config{Name: name, Description: c.Description, Argv: argv, Parameters: params, Sandbox: spec})
	if err != nil {
		if field, msg, ok := strings.Cut(err.Error(), ": "); ok && !strings.Contains(field, " ") {
			return nil, b.doc.ErrAt(at+"."+field, "%s", msg)
		}
		return nil, b.doc.ErrAt(at, "%v", err)
	}
	return t, nil
}

// replayOnlyTool is an HTTP or command tool for an engine that runs none: its
// recorded spec (the snapshot's), else the one its entry describes — never its
// secrets, variables or files, which stay where it ran.
func (b builder) replayOnlyTool(at, name string, c config.Tool) (fsm.Tool, error) {
	if s, ok := b.opts.Snapshot[name]; ok {
		return fromSnapshot(s), nil
	}
	params, err := b.parameters(at+".parameters", c.Parameters)
	if err != nil {
		return nil, err
	}
	idempotent := c.URL != "" && (c.Idempotent || c.Dedupe == config.DedupeIdempotencyKey)
	return &replayTool{spec: fsm.ToolSpec{Name: name, Description: c.Description, Parameters: params, Idempotent: idempotent}}, nil
}

// ownFolder refuses a tool folder that holds the config or turnlog's own files.
func (b builder) ownFolder(at, dir string) error {
	if cfg, err := realPath(b.doc.Name); err == nil && b.doc.Name != "" {
		if seen, err := realPath(dir); err == nil {
			if rel, err := filepath.Rel(seen, cfg); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return b.doc.ErrAt(at, "the tool's folder %s holds the config %s: put the tool in a folder of its own (such as tools/) or name one with dir:", seen, cfg)
			}
		}
	}
	return b.exposes(at, dir, "the tool's folder")
}

// setField is a field of a tool entry and whether it is given, in the order errors
// about them are reported.
type setField struct {
	name string
	set  bool
}
