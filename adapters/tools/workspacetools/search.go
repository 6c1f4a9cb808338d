package workspacetools

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/turnlog/turnlog/sandbox"
)

// skippedDirs are never walked: repository internals, dependencies, build output.
var skippedDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, "dist": true, "build": true,
	"target": true, ".venv": true, "__pycache__": true, ".cache": true}

type globArgs struct {
	Pattern string `json:"pattern" jsonschema:"description=A glob over workspace paths; ** matches any depth"`
	Max     int    `json:"max,omitempty" jsonschema:"minimum=1,maximum=1000,description=Most paths to return (default 100)"`
}

type globResult struct {
	Matches []string `json:"matches"`
	Truncation
}

func globFiles(ws *sandbox.Workspace) func(context.Context, globArgs) (any, error) {
	return func(_ context.Context, a globArgs) (any, error) {
		if !doublestar.ValidatePattern(a.Pattern) {
			return nil, fmt.Errorf("pattern %q is not a valid glob", a.Pattern)
		}
		limit := capOr(a.Max, DefaultMaxHits, 1000)
		res := globResult{Matches: []string{}}
		err := walk(ws, func(p string, _ fs.DirEntry) error {
			if m, _ := doublestar.Match(a.Pattern, p); !m {
				return nil
			}
			if len(res.Matches) == limit {
				res.Truncated, res.Reason = true, fmt.Sprintf("more than %d paths match; narrow the pattern", limit)
				return fs.SkipAll
			}
			res.Matches = append(res.Matches, p)
			return nil
		})
		return res, err
	}
}

type grepArgs struct {
	Pattern  string `json:"pattern" jsonschema:"description=A regular expression (Go syntax)"`
	Paths    string `json:"paths,omitempty" jsonschema:"description=A glob of the files to search (default **)"`
	MaxHits  int    `json:"max_hits,omitempty" jsonschema:"minimum=1,maximum=1000,description=Most hits to return (default 100)"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"minimum=20,maximum=2000,description=Characters of a line shown (default 300)"`
}

type grepResult struct {
	Hits          []string `json:"hits"` // path:line:text
	SkippedBinary []string `json:"skipped_binary,omitempty"`
	Truncation
}

func grepFiles(ws *sandbox.Workspace) func(context.Context, grepArgs) (any, error) {
	return func(ctx context.Context, a grepArgs) (any, error) {
		re, err := regexp.Compile(a.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pattern: %v", err)
		}
		glob := a.Paths
		if glob == "" {
			glob = "**"
		}
		if !doublestar.ValidatePattern(glob) {
			return nil, fmt.Errorf("paths %q is not a valid glob", glob)
		}
		limit, width := capOr(a.MaxHits, DefaultMaxHits, 1000), capOr(a.MaxChars, MaxLineChars, 2000)
		res := grepResult{Hits: []string{}}
		var long int
		err = walk(ws, func(p string, d fs.DirEntry) error {
			if m, _ := doublestar.Match(glob, p); !m || d.IsDir() {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			f, _, err := ws.Open(p)
			if err != nil {
				return nil // refused or gone: not searched
			}
			defer f.Close()
			r := bufio.NewReaderSize(f, 64<<10)
			if head, _ := r.Peek(binaryProbe); bytes.IndexByte(head, 0) >= 0 {
				res.SkippedBinary = append(res.SkippedBinary, p)
				return nil
			}
			for n := 1; ; n++ {
				line, cut, err := readLine(r, 64<<10)
				if line == "" && !cut && err != nil {
					return nil
				}
				if !re.MatchString(line) {
					continue
				}
				if len(res.Hits) == limit {
					res.Truncated, res.Reason = true, fmt.Sprintf("more than %d hits; narrow the pattern or paths", limit)
					return fs.SkipAll
				}
				if len(line) > width {
					line, long = line[:width]+"…[line cut]", long+1
				}
				res.Hits = append(res.Hits, fmt.Sprintf("%s:%d:%s", p, n, line))
			}
		})
		if long > 0 && !res.Truncated {
			res.Truncated, res.Reason = true, fmt.Sprintf("%d lines longer than %d characters were cut (marked …[line cut])", long, width)
		}
		return res, err
	}
}

// walk visits the workspace's files and directories, skipping dependency and build
// directories and what the default-deny list refuses.
func walk(ws *sandbox.Workspace, fn func(p string, d fs.DirEntry) error) error {
	return fs.WalkDir(ws.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		if d.IsDir() && skippedDirs[path.Base(p)] {
			return fs.SkipDir
		}
		if _, err := ws.Rel(p); err != nil {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		return fn(strings.TrimPrefix(p, "./"), d)
	})
}

func capOr(v, def, most int) int {
	if v <= 0 {
		return def
	}
	return min(v, most)
}
