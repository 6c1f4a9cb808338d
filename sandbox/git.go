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
// in, a file git's configuration, hooks or pointers live in.
func gitProtected(inside string) bool {
	inside = strings.ToLower(inside)
	for {
		rest, ok := strings.CutPrefix(inside, "modules/")
		if !ok {
			rest, ok = strings.CutPrefix(inside, "worktrees/")
		}
		if !ok {
			break
		}
		_, after, found := strings.Cut(rest, "/")
		if !found {
			return false // modules/<name> itself: its contents decide
		}
		inside = after
	}
	for _, p := range gitNeverWritable {
		if inside == p || strings.HasPrefix(inside, p+"/") {
			return true
		}
	}
	return false
}
