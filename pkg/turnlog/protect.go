package turnlog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/turnlog/turnlog/policy"
)

// exposes refuses a directory a sandboxed process sees (a workspace, a stdio MCP
// server's directory) when it holds one of turnlog's own files: the config file
// itself, and Options.Protected (the database and its -wal and -shm, the API keys
// file). A command there could read every user's sessions and keys, or rewrite the
// log and the config the next start trusts. Only a caller that names its own files
// (the binary, for the commands that run tools) asks for this.
func (b builder) exposes(at, dir, what string) error {
	if len(b.opts.Protected) == 0 {
		return nil
	}
	seen, err := realPath(dir)
	if err != nil {
		return nil // a directory that cannot be opened fails where it is used
	}
	own := append([]string(nil), b.opts.Protected...)
	if b.doc.Name != "" {
		if fi, err := os.Stat(b.doc.Name); err == nil && fi.Mode().IsRegular() {
			own = append(own, b.doc.Name)
		}
	}
	for _, f := range own {
		p, err := realPath(f)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(seen, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return b.doc.ErrAt(at, "%s %s holds turnlog's own file %s, which its commands could read and change: keep the database, the config and the API keys outside every directory a sandbox sees", what, seen, p)
		}
	}
	return nil
}

// realPath is p made absolute with its symlinks resolved — through its deepest
// existing ancestor when p does not exist yet (a database about to be created).
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return filepath.Join(real, rest), nil
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return "", os.ErrNotExist
		}
		rest, abs = filepath.Join(filepath.Base(abs), rest), parent
	}
}

// foldersOutsideWorkspace refuses a command tool's or stdio server's folder that
// overlaps the app's workspace either way: the agent's file tools could rewrite the
// program it runs (with the environment and network the tool has), or the program
// would see the workspace.
func (b builder) foldersOutsideWorkspace(at string, access *policy.Engine) error {
	if access == nil || access.Workspace == "" {
		return nil
	}
	ws, err := realPath(access.Workspace)
	if err != nil {
		return nil
	}
	for _, f := range *b.folders {
		dir, err := realPath(f.dir)
		if err != nil {
			continue
		}
		if within(dir, ws) || within(ws, dir) {
			return b.doc.ErrAt(f.at, "%s %s overlaps the app's workspace %s, where agents' tools write: keep programs outside every workspace", f.what, dir, ws)
		}
	}
	return nil
}

// within says whether p is dir or lies under it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// ownFilesUnreadable refuses turnlog's own files — the database, the config, the API
// keys file — where every sandboxed program reads (the system folders it is shown,
// /etc among them) and readable by others, which the program's uid is.
func ownFilesUnreadable(config string, protected, systemDirs []string) error {
	for _, f := range append([]string{config}, protected...) {
		p, err := realPath(f)
		if err != nil {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o004 == 0 {
			continue
		}
		for _, sys := range systemDirs {
			if real, err := filepath.EvalSymlinks(sys); err == nil && within(p, real) {
				return fmt.Errorf("turnlog's own file %s lies in %s, which every sandboxed command can read, and is readable by others: chmod o-r it, or keep it elsewhere", p, sys)
			}
		}
	}
	return nil
}
