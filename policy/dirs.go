package policy

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Where each command of a script runs: cd moves the commands after it, so that
// `cd frontend && cat ../package.json` reads package.json. A command's directories
// are every one it may run in (a cd that fails leaves the shell where it was; a
// branch or a loop may or may not run); each relative path it names is checked
// against each of them. A directory known only when the script runs leaves the paths
// relative to where the script starts.

// dirUnknown stands for a directory known only when the script runs.
const dirUnknown = "\x00"

// maxDirs bounds the directories a command may run in; past it they are unknown.
const maxDirs = 8

// dirTracker records, for each simple command and redirection of a script, the
// directories (relative to where the script starts; "" is there) it may run in.
type dirTracker struct {
	at map[syntax.Node][]string
}

func trackDirs(f *syntax.File) map[syntax.Node][]string {
	t := &dirTracker{at: map[syntax.Node][]string{}}
	t.stmts(f.Stmts, []string{""})
	return t.at
}

// after is where a shell may be after a command: ok if it succeeded (what && goes on
// from), any whatever it did.
type after struct{ ok, any []string }

func same(dirs []string) after { return after{dirs, dirs} }

func (t *dirTracker) stmts(list []*syntax.Stmt, dirs []string) after {
	out := same(dirs)
	for _, s := range list {
		out = t.stmt(s, out.any)
	}
	return out
}

func (t *dirTracker) stmt(s *syntax.Stmt, dirs []string) after {
	if s == nil {
		return same(dirs)
	}
	for _, r := range s.Redirs {
		t.at[r] = dirs
		t.nested(r.Word, dirs)
	}
	if s.Cmd == nil {
		return same(dirs)
	}
	out := t.command(s.Cmd, dirs)
	if s.Background || s.Coprocess {
		return same(dirs) // its own process: the shell stays where it was
	}
	if s.Negated {
		out.ok = out.any
	}
	return out
}

func (t *dirTracker) command(c syntax.Command, dirs []string) after {
	switch c := c.(type) {
	case *syntax.CallExpr:
		t.at[c] = dirs
		t.nested(c, dirs)
		moved, ok := cdTo(c, dirs)
		if !ok {
			return same(dirs)
		}
		return after{moved, unionDirs(dirs, moved)} // a cd that fails leaves the shell where it was
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt: // Y runs once X succeeded
			x := t.stmt(c.X, dirs)
			y := t.stmt(c.Y, x.ok)
			return after{y.ok, unionDirs(x.any, y.any)}
		case syntax.OrStmt: // Y runs once X failed
			x := t.stmt(c.X, dirs)
			y := t.stmt(c.Y, x.any)
			return after{unionDirs(x.ok, y.ok), unionDirs(x.any, y.any)}
		}
		t.stmt(c.X, dirs) // a pipeline: each side in a process of its own
		t.stmt(c.Y, dirs)
		return same(dirs)
	case *syntax.Subshell:
		t.stmts(c.Stmts, dirs)
		return same(dirs)
	case *syntax.Block:
		return t.stmts(c.Stmts, dirs)
	case *syntax.IfClause:
		out := dirs
		for clause := c; clause != nil; clause = clause.Else {
			cond := t.stmts(clause.Cond, out)
			out = unionDirs(out, cond.any, t.stmts(clause.Then, cond.ok).any)
		}
		return same(out)
	case *syntax.WhileClause:
		return same(t.loop(dirs, func(in []string) []string { return t.stmts(c.Do, t.stmts(c.Cond, in).any).any }))
	case *syntax.ForClause:
		t.nested(c.Loop, dirs)
		return same(t.loop(dirs, func(in []string) []string { return t.stmts(c.Do, in).any }))
	case *syntax.CaseClause:
		t.nested(c.Word, dirs)
		out := dirs
		for _, item := range c.Items {
			out = unionDirs(out, t.stmts(item.Stmts, dirs).any)
		}
		return same(out)
	case *syntax.FuncDecl:
		t.stmt(c.Body, []string{dirUnknown}) // it runs wherever it is called
		return same(dirs)
	case *syntax.TimeClause:
		return t.stmt(c.Stmt, dirs)
	case *syntax.CoprocClause:
		t.stmt(c.Stmt, dirs)
		return same(dirs)
	default:
		t.nested(c, dirs)
		return same(dirs)
	}
}

// loop runs body twice, the second time from where the first may have left: a
// loop may run its body any number of times, or none.
func (t *dirTracker) loop(dirs []string, body func([]string) []string) []string {
	first := body(dirs)
	return unionDirs(dirs, body(unionDirs(dirs, first)))
}

// nested records the commands in n's command and process substitutions, which run
// where n does (in a process of their own).
func (t *dirTracker) nested(n syntax.Node, dirs []string) {
	if n == nil {
		return
	}
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.CmdSubst:
			t.stmts(m.Stmts, dirs)
			return false
		case *syntax.ProcSubst:
			t.stmts(m.Stmts, dirs)
			return false
		}
		return true
	})
}

// cdTo is where a shell in dirs is once the command c, a cd, pushd or popd,
// succeeded; ok is false for any other command.
func cdTo(c *syntax.CallExpr, dirs []string) ([]string, bool) {
	if len(c.Args) == 0 {
		return nil, false
	}
	name, ok := staticWord(c.Args[0])
	args := c.Args[1:]
	if ok && (name == "builtin" || name == "command") && len(args) > 0 {
		name, ok = staticWord(args[0]) // builtin cd is cd
		args = args[1:]
	}
	if !ok || name != "cd" && name != "pushd" && name != "popd" {
		return nil, false
	}
	var target string
	known := name != "popd"
	for _, w := range args {
		a, static := staticWord(w)
		if !static {
			known = false
			break
		}
		if strings.HasPrefix(a, "-") && a != "-" && target == "" {
			continue // -L, -P, -e, -@
		}
		target = a
		break
	}
	if target == "" {
		target = "~" // cd alone: HOME, outside the workspace
	}
	if target == "-" {
		known = false
	}
	moved := make([]string, 0, len(dirs))
	for _, d := range dirs {
		switch {
		case !known || d == dirUnknown:
			moved = append(moved, dirUnknown)
		case path.IsAbs(target) || strings.HasPrefix(target, "~"):
			moved = append(moved, target)
		default:
			moved = append(moved, path.Join(d, target))
		}
	}
	return unionDirs(moved), true
}

// unionDirs is every directory of the sets, once; past maxDirs, unknown.
func unionDirs(sets ...[]string) []string {
	var out []string
	for _, set := range sets {
		for _, d := range set {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	if len(out) > maxDirs {
		return []string{dirUnknown}
	}
	return out
}

// rebase makes the relative paths of the commands from index from on relative to
// where the script starts, given the directories they run in: one resource for each
// directory a path may be below.
func (s *Script) rebase(from int, dirs []string) {
	if len(dirs) == 0 || len(dirs) == 1 && (dirs[0] == "" || dirs[0] == dirUnknown) {
		return
	}
	for i := from; i < len(s.Commands); i++ {
		c := &s.Commands[i]
		var res []Resource
		for _, r := range c.Resources {
			if r.Path == "" || path.IsAbs(r.Path) || strings.HasPrefix(r.Path, "~") {
				res = append(res, r)
				continue
			}
			for _, d := range dirs {
				moved := r
				if d != dirUnknown && d != "" {
					moved.Path = path.Join(d, r.Path)
				}
				if !slices.Contains(res, moved) {
					res = append(res, moved)
				}
			}
		}
		c.Resources = res
	}
}
