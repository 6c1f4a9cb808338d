package config

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// Access is an app's tool policy: a sandbox mode and rules over subject, action and
// resource (see package policy).
type Access struct {
	Mode string `yaml:"mode"` // read-only, workspace-write (default), network-off, network-allowlist, full-isolated
	// Workspace is the directory tools work in, or — as WorkspaceScope says — the root
	// under which each user or session gets one; paths are resolved against it
	// (default: the directory turnlog runs in).
	Workspace string `yaml:"workspace"`
	// WorkspaceScope is whose a workspace is: user (the default: <workspace>/users/<user>),
	// session (<workspace>/sessions/<session>) or shared (the workspace itself, for
	// every user and session of the app).
	WorkspaceScope string `yaml:"workspace_scope"`
	// SharedBranchRestore lets a branch ask for files "restore" under the shared
	// scope: reverting its source's turns after the branch point in the workspace
	// every session of the app uses (default false: refused).
	SharedBranchRestore bool `yaml:"shared_branch_restore"`
	// Undo bounds what the undo log keeps of the workspace's changes.
	Undo  *Undo        `yaml:"undo"`
	Rules []AccessRule `yaml:"rules"`
	// Sandbox is how commands and stdio MCP servers are confined: landlock (default)
	// or bubblewrap (for kernels without Landlock; needs bwrap installed).
	Sandbox string `yaml:"sandbox"`
	// Network is how commands reach the network: off (the default), allowlist
	// (through turnlog's proxy, to the hosts allow rules name; the default of mode
	// network-allowlist) or host (the machine's own network: only when said here).
	Network string `yaml:"network"`
	// Git is what commands may do to the workspace's repositories: read-only (the
	// default: every .git is read-only to them) or write (commit, branch — never git's
	// config, hooks or pointers to other directories).
	Git string `yaml:"git"`
}

// Undo bounds what the undo log keeps of the files a turn's calls change, in bytes
// (0: the default; -1: no cap). A change past a cap, or of a path Exclude matches,
// is recorded with hashes only and cannot be reverted.
type Undo struct {
	FileBytes    int64    `yaml:"file_bytes"`    // the largest file content kept (default 16 MiB)
	CallBytes    int64    `yaml:"call_bytes"`    // what one call keeps (default 256 MiB)
	TurnBytes    int64    `yaml:"turn_bytes"`    // what one turn keeps (default 256 MiB)
	SessionBytes int64    `yaml:"session_bytes"` // what one session keeps (default 1 GiB)
	Exclude      []string `yaml:"exclude"`       // globs (doublestar) of workspace paths whose contents are never kept
}

// checkUndo checks the undo section of the policy at at (a policy's path).
func (d *Doc) checkUndo(at string, u *Undo) error {
	if u == nil {
		return nil
	}
	for _, c := range []struct {
		name string
		n    int64
	}{{"file_bytes", u.FileBytes}, {"call_bytes", u.CallBytes}, {"turn_bytes", u.TurnBytes}, {"session_bytes", u.SessionBytes}} {
		if c.n < -1 {
			return d.ErrAt(at+".undo."+c.name, "is %d: give a number of bytes, 0 for the default or -1 for no cap", c.n)
		}
	}
	for i, g := range u.Exclude {
		if g == "" || !doublestar.ValidatePattern(g) {
			return d.ErrAt(fmt.Sprintf("%s.undo.exclude[%d]", at, i), "%q is not a valid glob", g)
		}
	}
	return nil
}

// AccessRule is one policy rule.
type AccessRule struct {
	Name        string   `yaml:"name"`
	Decision    string   `yaml:"decision"` // allow, deny, require_approval
	Agents      []string `yaml:"agents"`
	Skills      []string `yaml:"skills"`
	Tools       []string `yaml:"tools"`
	Actions     []string `yaml:"actions"`  // read, write, execute, network, delete
	Paths       []string `yaml:"paths"`    // globs (doublestar), workspace-relative
	Commands    []string `yaml:"commands"` // argv prefixes: "git push", "rm -rf *"
	Domains     []string `yaml:"domains"`  // host globs
	MaxLevel    string   `yaml:"max_level"`
	Alternative string   `yaml:"alternative"`
}

// Access is the policy engine of an app's policy section at at (nil: the app has no
// tool policy, its tools run as configured); workspace, when set, replaces the
// section's (turnlog run --workspace).
func (d *Doc) Access(at string, c *Access, workspace string) (*policy.Engine, error) {
	if c == nil {
		return nil, nil
	}
	if err := d.checkUndo(at, c.Undo); err != nil {
		return nil, err
	}
	dir := c.Workspace
	if workspace != "" {
		dir = workspace
	}
	e := &policy.Engine{Mode: policy.ModeWorkspaceWrite, Workspace: dir}
	if dir != "" {
		ws, err := filepath.Abs(dir)
		if err != nil {
			return nil, d.ErrAt(at+".workspace", "%v", err)
		}
		e.Workspace = ws
	}
	if c.Mode != "" {
		if !slices.Contains(policy.Modes, policy.Mode(c.Mode)) {
			return nil, d.ErrAt(at+".mode", "unknown mode %q (%v)", c.Mode, policy.Modes)
		}
		e.Mode = policy.Mode(c.Mode)
	}
	if c.Sandbox != "" && !slices.Contains(sandbox.Mechanisms, c.Sandbox) {
		return nil, d.ErrAt(at+".sandbox", "unknown sandbox %q (%v)", c.Sandbox, sandbox.Mechanisms)
	}
	e.Mechanism = c.Sandbox
	switch c.Git {
	case "", "read-only":
	case "write":
		e.GitWrites = true
	default:
		return nil, d.ErrAt(at+".git", "unknown git setting %q (read-only or write)", c.Git)
	}
	if c.Network != "" {
		n := policy.Network(c.Network)
		switch mode := e.EffectiveMode(); {
		case !slices.Contains(policy.Networks, n):
			return nil, d.ErrAt(at+".network", "unknown network %q (%v)", c.Network, policy.Networks)
		case n != policy.NetworkOff && (mode == policy.ModeNetworkOff || mode == policy.ModeFullIsolated || mode == policy.ModeReadOnly):
			return nil, d.ErrAt(at+".network", "mode %s has no network; network: %s contradicts it", mode, n)
		case n == policy.NetworkHost && mode == policy.ModeNetworkAllowlist:
			return nil, d.ErrAt(at+".network", "mode network-allowlist goes through the proxy; network: host contradicts it")
		}
		e.Network = n
	}
	seen := map[string]bool{}
	for i, rc := range c.Rules {
		here := fmt.Sprintf("%s.rules[%d]", at, i)
		switch {
		case rc.Name == "":
			return nil, d.ErrAt(here+".name", "every rule needs a name")
		case seen[rc.Name]:
			return nil, d.ErrAt(here+".name", "%q is used twice", rc.Name)
		}
		seen[rc.Name] = true
		r := policy.Rule{Name: rc.Name, Decision: policy.Decision(rc.Decision), Agents: rc.Agents, Skills: rc.Skills, Tools: rc.Tools,
			Paths: rc.Paths, Commands: rc.Commands, Domains: rc.Domains, Alternative: rc.Alternative}
		if !slices.Contains([]policy.Decision{policy.Allow, policy.Deny, policy.RequireApproval}, r.Decision) {
			return nil, d.ErrAt(here+".decision", "must be allow, deny or require_approval, not %q", rc.Decision)
		}
		for j, a := range rc.Actions {
			act := policy.Action(a)
			if !slices.Contains([]policy.Action{policy.ActRead, policy.ActWrite, policy.ActExecute, policy.ActNetwork, policy.ActDelete}, act) {
				return nil, d.ErrAt(fmt.Sprintf("%s.actions[%d]", here, j), "unknown action %q (read, write, execute, network, delete)", a)
			}
			r.Actions = append(r.Actions, act)
		}
		for j, p := range append(append([]string{}, rc.Paths...), rc.Domains...) {
			if !doublestar.ValidatePattern(p) {
				return nil, d.ErrAt(here, "pattern %d (%q) is not a valid glob", j, p)
			}
		}
		if rc.MaxLevel != "" {
			l, ok := policy.ParseLevel(rc.MaxLevel)
			if !ok {
				return nil, d.ErrAt(here+".max_level", "must be L0 … L5, not %q", rc.MaxLevel)
			}
			r.MaxLevel = &l
		}
		e.Rules = append(e.Rules, r)
	}
	return e, nil
}
