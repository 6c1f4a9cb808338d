package workspacetools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/turnlog/turnlog/sandbox"
	"github.com/turnlog/turnlog/undo"
)

type writeArgs struct {
	Path      string `json:"path" jsonschema:"description=A path inside the workspace"`
	Content   string `json:"content" jsonschema:"description=The whole new content"`
	Overwrite bool   `json:"overwrite,omitempty" jsonschema:"description=Replace an existing file"`
}

type writeResult struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
	SHA256  string `json:"sha256"` // of the content written
	Diff    string `json:"diff"`
	Truncation
}

func writeFile(ws *sandbox.Workspace, st *seen, wss *Workspaces) func(context.Context, writeArgs) (any, error) {
	return func(ctx context.Context, a writeArgs) (any, error) {
		if len(a.Content) > MaxWriteBytes {
			return nil, fmt.Errorf("content is %d bytes, more than the %d write_file takes", len(a.Content), MaxWriteBytes)
		}
		rel, err := ws.WritableRel(a.Path)
		if err != nil {
			return nil, err
		}
		unlock, err := ws.Lock()
		if err != nil {
			return nil, err
		}
		defer unlock()
		if err := ws.CheckWrite(rel); err != nil {
			return nil, err
		}
		old, existed := "", false
		if f, _, err := ws.Open(rel); err == nil {
			raw, rerr := io.ReadAll(io.LimitReader(f, MaxWriteBytes+1))
			f.Close()
			if rerr != nil {
				return nil, rerr
			}
			old, existed = string(raw), true
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if existed && !a.Overwrite {
			return nil, fmt.Errorf("%s exists; set overwrite: true to replace it", rel)
		}
		if err := commitWrite(ctx, ws, wss, rel, a.Content); err != nil {
			return nil, err
		}
		st.remember(ctx, rel, written(ws, rel, a.Content))
		diff, cut := undo.Diff(rel, old, a.Content)
		res := writeResult{Path: rel, Bytes: len(a.Content), Created: !existed, SHA256: hashOf(a.Content), Diff: diff}
		if cut {
			res.Truncated, res.Reason = true, "the diff is longer than its cap; the file was written whole"
		}
		return res, nil
	}
}
