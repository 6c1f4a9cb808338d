package workspacetools

import (
	"context"
	"encoding/json"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// Caps on what one call reads or returns.
const (
	DefaultReadBytes = 64 << 10 // read_file: bytes of content per call
	MaxReadBytes     = 1 << 20
	MaxWriteBytes    = 1 << 20 // write_file: content size
	DefaultMaxHits   = 100     // grep hits and glob matches
	MaxLineChars     = 300     // grep: characters of a line shown
	binaryProbe      = 8 << 10 // bytes looked at to tell a binary file
)

// Tools returns the built-in file tools, each call working in the workspace wss
// gives it; recall (nil: none) is how edit_file learns what a session read before
// this process ran.
func Tools(wss *Workspaces, recall Recall) []fsm.Tool {
	st := &seen{files: map[string]map[string]seenFile{}, recall: recall}
	wss.mu.Lock()
	wss.seen = append(wss.seen, st) // a revert makes what it puts back unread
	wss.mu.Unlock()
	return []fsm.Tool{
		&target[readArgs]{functool.MustNew("read_file", "Read a text file of the workspace, with line numbers. Pages with start_line/end_line and a byte cap; binary files are refused.",
			inWorkspace(wss, func(ws *sandbox.Workspace) func(context.Context, readArgs) (any, error) { return readFile(ws, st) })),
			func(a readArgs) fsm.PolicyCall { return pathCall(policy.L1, policy.ActRead, a.Path) }},
		&target[writeArgs]{functool.MustNew("write_file", "Create a file in the workspace (overwriting an existing one needs overwrite: true). Returns a diff.",
			inWorkspace(wss, func(ws *sandbox.Workspace) func(context.Context, writeArgs) (any, error) {
				return writeFile(ws, st, wss)
			})),
			func(a writeArgs) fsm.PolicyCall { return pathCall(policy.L2, policy.ActWrite, a.Path) }},
		&target[editArgs]{functool.MustNew("edit_file", "Replace text that occurs exactly once in a file this session has read; refused if the file changed since. Returns the changed line ranges and a diff.",
			inWorkspace(wss, func(ws *sandbox.Workspace) func(context.Context, editArgs) (any, error) {
				return editFile(ws, st, wss)
			})),
			func(a editArgs) fsm.PolicyCall { return pathCall(policy.L2, policy.ActWrite, a.Path) }},
		&target[globArgs]{functool.MustNew("glob", "List workspace files matching a pattern (** for any depth); .git, node_modules and build directories are skipped.",
			inWorkspace(wss, globFiles)), func(globArgs) fsm.PolicyCall { return pathCall(policy.L1, policy.ActRead, ".") }},
		&target[grepArgs]{functool.MustNew("grep", "Search workspace files for a regular expression; hits are path:line:text.",
			inWorkspace(wss, grepFiles)), func(grepArgs) fsm.PolicyCall { return pathCall(policy.L1, policy.ActRead, ".") }},
	}
}

// inWorkspace runs a tool function in the workspace of each call.
func inWorkspace[A any](wss *Workspaces, fn func(*sandbox.Workspace) func(context.Context, A) (any, error)) func(context.Context, A) (any, error) {
	return func(ctx context.Context, a A) (any, error) {
		ws, err := wss.For(ctx)
		if err != nil {
			return nil, err
		}
		return fn(ws)(ctx, a)
	}
}

func newTool[A any](name, description string, fn func(context.Context, A) (any, error)) *functool.Tool[A] {
	return functool.MustNew(name, description, fn)
}

// target is a function tool that tells the policy what a call acts on.
type target[A any] struct {
	*functool.Tool[A]
	call func(A) fsm.PolicyCall
}

func (t *target[A]) PolicyCall(args json.RawMessage) fsm.PolicyCall {
	var a A
	if err := json.Unmarshal(args, &a); err != nil {
		return fsm.PolicyCall{Level: policy.L2, Actions: []policy.Action{policy.ActExecute}}
	}
	return t.call(a)
}

func pathCall(level policy.Level, act policy.Action, path string) fsm.PolicyCall {
	return fsm.PolicyCall{Level: level, Actions: []policy.Action{act}, Resources: []policy.Resource{{Action: act, Path: path}}}
}

// Truncation says whether and why a result was cut.
type Truncation struct {
	Truncated bool   `json:"truncated"`
	Reason    string `json:"truncated_reason,omitempty"`
}
