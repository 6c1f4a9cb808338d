package sandbox

import (
	"strings"
)

// What of a repository's .git no command may ever write, even where git writes are
// allowed (Spec.GitWritable): what git reads as configuration or code to run, and what
// points it at other directories — for the repository and for each of its submodules
// (modules/<name>/…) and worktrees (worktrees/<name>/…).
var gitNeverWritable = []string{"config", "config.worktree", "commondir", "gitdir", "hooks", "info", "objects/info/alternates", "objects/info/http-alternates"}

// gitProtected says whether inside (a path relative to a .git directory) is, or lies
// in, a file git's configuration, hooks or pointers live in. Under modules/ and
// worktrees/ a name may hold slashes (a submodule at lib/foo is modules/lib/foo), so
// there any component sequence that is one of them protects what lies below it.
func gitProtected(inside string) bool {
	inside = strings.ToLower(inside)
	nested := strings.HasPrefix(inside, "modules/") || strings.HasPrefix(inside, "worktrees/")
	parts := strings.Split(inside, "/")
	for start := range parts {
		if start > 0 && !nested {
			break
		}
		rest := strings.Join(parts[start:], "/")
		for _, p := range gitNeverWritable {
			if rest == p || strings.HasPrefix(rest, p+"/") {
				return true
			}
		}
	}
	return false
}
