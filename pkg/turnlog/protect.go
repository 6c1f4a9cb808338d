package turnlog

import (
	"os"
	"path/filepath"
	"strings"
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
