package turnlog

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/config"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// builtinNames are the tool names an agent may list without declaring them: the
// workspace's file tools and bash (sandboxed as the policy's mode says).
func builtinNames() []string {
	return []string{"read_file", "write_file", "edit_file", "glob", "grep", "bash"}
}

// builtinSettings says whether an app's tools entry only configures a built-in tool
// (show_errors, timeout, needs_approval, …): it names one, is no tool of its own
// kind, and the program offers no Go function of that name.
func (b builder) builtinSettings(name string, c config.Tool) bool {
	_, fn := b.opts.Functions[name]
	return slices.Contains(builtinNames(), name) && !fn && c.Function == "" && c.URL == "" && len(c.Command) == 0
}

// builtinTools adds the built-in file tools an app's agents list (and the app does not
// declare itself), working in the app's workspace, with the settings the app's tools
// section gives them; they show the model their errors unless it says show_errors:
// false. An app that uses them must have a policy, so every call of them is decided
// and recorded.
func (b builder) builtinTools(at string, c config.App, access *policy.Engine, tools map[string]fsm.Tool) error {
	wanted := ""
	for _, an := range config.SortedKeys(c.Agents) {
		for i, ref := range c.Agents[an].Tools {
			if _, declared := tools[ref.Tool]; !declared && slices.Contains(builtinNames(), ref.Tool) && wanted == "" {
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
	scope := workspacetools.ScopeUser
	switch {
	case b.opts.Workspace != "" && b.opts.WorkspaceScope != "":
		scope = workspacetools.Scope(b.opts.WorkspaceScope)
		if !slices.Contains(workspacetools.Scopes, scope) {
			return fmt.Errorf("unknown workspace scope %q (%v)", b.opts.WorkspaceScope, workspacetools.Scopes)
		}
	case b.opts.Workspace != "":
		scope = workspacetools.ScopeShared // a folder named for this run (turnlog run --workspace)
	case c.Policy.WorkspaceScope != "":
		scope = workspacetools.Scope(c.Policy.WorkspaceScope)
		if !slices.Contains(workspacetools.Scopes, scope) {
			return b.doc.ErrAt(at+".policy.workspace_scope", "unknown workspace scope %q (%v)", c.Policy.WorkspaceScope, workspacetools.Scopes)
		}
	}
	wss, err := workspacetools.NewWorkspaces(dir, scope)
	if err != nil {
		return b.doc.ErrAt(at+".policy.workspace", "%v", err)
	}
	wss.SetUndoCaps(undoCaps(c.Policy.Undo))
	// What a crash left in the middle of an apply is taken back before any command
	// runs (a workspace that cannot be is taken back by its next apply, or fails it).
	did, err := wss.Recover(b.recorded())
	for _, d := range did {
		b.opts.Logger.Warn().Str("app", strings.TrimPrefix(at, "apps.")).Msg(d)
	}
	if err != nil {
		b.opts.Logger.Error().Err(err).Str("app", strings.TrimPrefix(at, "apps.")).Msg("an apply a crash left could not be settled")
	}
	if state, err := b.opts.stateDir(); err == nil {
		wss.KeepHomes(filepath.Join(state, "homes"))
	}
	access.Workspace = wss.Root().Dir()
	*b.roots = append(*b.roots, workspaceRoot{app: strings.TrimPrefix(at, "apps."), at: at + ".policy.workspace", dir: wss.Root().Dir(), scope: scope})
	spec := workspacetools.SpecFor(wss.Root(), access, b.opts.NeverDial...)
	*b.shells = append(*b.shells, appShell{app: strings.TrimPrefix(at, "apps."), wss: wss, spec: spec})
	for _, t := range append(workspacetools.Tools(wss, b.recall()), workspacetools.Bash(spec, access, wss)) {
		name := t.Spec().Name
		if _, declared := tools[name]; declared {
			continue
		}
		settings, given := c.Tools[name]
		if !given || !b.builtinSettings(name, settings) {
			settings = config.Tool{}
		}
		if err := b.onlySettings(at+".tools."+name, settings, "a built-in tool takes settings only (show_errors, timeout, max_calls, needs_approval, expires_in)"); err != nil {
			return err
		}
		if settings.ShowErrors == nil {
			show := true
			settings.ShowErrors = &show
		}
		configured, err := b.configure(at+".tools."+name, name, t, settings)
		if err != nil {
			return err
		}
		tools[name] = configured
	}
	return nil
}

// recall is how edit_file reads what a session saw before this process ran: from the
// open log (none when the apps are built without one).
func (b builder) recall() workspacetools.Recall {
	if b.opts.log == nil {
		return nil
	}
	return recallReads(b.opts.log)
}

// recorded asks the log whether the call an apply's tag names has its result there,
// or the revert a restore's tag names its record (see sandbox.Recorded); nil without
// a log.
func (b builder) recorded() sandbox.Recorded {
	if b.opts.log == nil {
		return nil
	}
	return func(tag string) (bool, error) {
		session, turn, path, ok := workspacetools.ParseApplyTag(tag)
		if !ok {
			return false, nil // no call named: nothing can have recorded it
		}
		evs, err := b.opts.log.Events(b.ctx, session, 0)
		if err != nil {
			if events.CodeOf(err) == events.CodeNotFound {
				return false, nil
			}
			return false, err
		}
		for _, ev := range evs {
			// A call's apply is kept only with the record of what it changed; a
			// revert's, with its record.
			if ev.Turn == turn && (ev.Type == events.TypeFilesChanged && ev.Path == fsm.FilesPath(path) || ev.Type == events.TypeWorkspaceReverted && ev.Path == path) {
				return true, nil
			}
		}
		return false, nil
	}
}

// undoCaps are the caps of the workspace tools' records that an app's policy.undo
// sets (0: the default; -1: none).
func undoCaps(u *config.Undo) workspacetools.UndoCaps {
	caps := workspacetools.DefaultUndoCaps
	if u == nil {
		return caps
	}
	for _, c := range []struct{ set, to *int64 }{{&u.FileBytes, &caps.FileBytes}, {&u.CallBytes, &caps.CallBytes}} {
		switch {
		case *c.set > 0:
			*c.to = *c.set
		case *c.set < 0:
			*c.to = math.MaxInt64
		}
	}
	caps.Exclude = u.Exclude
	return caps
}
