package turnlog

import (
	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
)

// workspaceRoot is where an app's built-in tools and commands work: the root its
// workspaces are made under (resolved, symlinks followed), and whose each one is.
type workspaceRoot struct {
	app, at, dir string
	scope        workspacetools.Scope
}

// rootsApart refuses two apps whose workspace roots overlap across a trust
// boundary: a shared or per-session root that holds, or lies in, another app's
// root would let one app's users read and change another's files (users/alice of a
// per-user app is a folder of a shared one). Two per-user apps on one root share
// each user's folder with that user alone: by design, allowed.
func (b builder) rootsApart(roots []workspaceRoot) error {
	for i, a := range roots {
		for _, o := range roots[i+1:] {
			if !within(a.dir, o.dir) && !within(o.dir, a.dir) {
				continue
			}
			if a.dir == o.dir && a.scope == workspacetools.ScopeUser && o.scope == workspacetools.ScopeUser {
				continue
			}
			return b.doc.ErrAt(o.at, "app %s's workspace %s (%s scope) overlaps app %s's %s (%s scope): one app's users would read and change the other's files; give each its own folder (policy.workspace), apart from the other's (two per-user apps may share one root)",
				o.app, o.dir, o.scope, a.app, a.dir, a.scope)
		}
	}
	return nil
}
