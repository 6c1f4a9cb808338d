package turnlog

import (
	"fmt"
	"slices"

	"github.com/turnlog/turnlog/adapters/workspace"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
)

// BuiltinTools are the tool names an agent may list without declaring them: the
// workspace's file tools and bash (sandboxed as the policy's mode says).
var BuiltinTools = []string{"read_file", "write_file", "edit_file", "glob", "grep", "bash"}

// builtinTools adds the built-in file tools an app's agents list (and the app does not
// declare itself), working in the app's workspace. An app that uses them must have a
// policy, so every call of them is decided and recorded.
func (b builder) builtinTools(at string, c config.App, access *policy.Engine, tools map[string]fsm.Tool) error {
	wanted := ""
	for _, an := range config.SortedKeys(c.Agents) {
		for i, ref := range c.Agents[an].Tools {
			if _, declared := tools[ref.Tool]; !declared && slices.Contains(BuiltinTools, ref.Tool) && wanted == "" {
				wanted = fmt.Sprintf("%s.agents.%s.tools[%d]", at, an, i)
			}
		}
	}
	if wanted == "" {
		return nil
	}
	if access == nil {
		return b.doc.ErrAt(wanted, "the built-in file tools need a policy: section (mode and rules) on the app")
	}
	dir := access.Workspace
	if dir == "" {
		dir = "."
	}
	if err := b.exposes(at+".policy.workspace", dir, "the workspace"); err != nil {
		return err
	}
	scope := workspace.ScopeUser
	switch {
	case b.opts.Workspace != "":
		scope = workspace.ScopeShared // a folder named for this run (turnlog run --workspace)
	case c.Policy.WorkspaceScope != "":
		scope = workspace.Scope(c.Policy.WorkspaceScope)
		if !slices.Contains(workspace.Scopes, scope) {
			return b.doc.ErrAt(at+".policy.workspace_scope", "unknown workspace scope %q (%v)", c.Policy.WorkspaceScope, workspace.Scopes)
		}
	}
	wss, err := workspace.NewWorkspaces(dir, scope)
	if err != nil {
		return b.doc.ErrAt(at+".policy.workspace", "%v", err)
	}
	access.Workspace = wss.Root().Dir()
	for _, t := range append(workspace.Tools(wss), workspace.Bash(workspace.SpecFor(wss.Root(), access, b.opts.NeverDial...), access, wss)) {
		if _, declared := tools[t.Spec().Name]; !declared {
			tools[t.Spec().Name] = t
		}
	}
	return nil
}
