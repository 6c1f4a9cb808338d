package commandtool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/turnlog/turnlog/adapters/tools/functool"
	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/sandbox"
)

// Limits of what a call returns.
const (
	DefaultMaxOutputBytes = 1 << 20
	stderrTail            = 2000 // characters of stderr a failure carries
)

// Config is one command tool.
type Config struct {
	Name, Description string
	// Argv is the program and its arguments, paths already resolved.
	Argv       []string
	Parameters json.RawMessage
	// Sandbox is where it runs: Workspace is the tool's own folder (read-only).
	Sandbox sandbox.Spec
	// MaxOutputBytes caps stdout; more is invalid_output.
	MaxOutputBytes int
}

// Tool is a program as a turnlog tool.
type Tool struct {
	c      Config
	schema *functool.Schema
}

var (
	_ fsm.Tool               = (*Tool)(nil)
	_ fsm.ArgumentsValidator = (*Tool)(nil)
)

// New checks c and builds the tool.
func New(c Config) (*Tool, error) {
	if len(c.Argv) == 0 {
		return nil, fmt.Errorf("command: a program to run is required")
	}
	if c.Sandbox.Workspace == "" {
		return nil, fmt.Errorf("dir: the tool's folder is required")
	}
	if len(c.Parameters) == 0 {
		c.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	schema, err := functool.CompileSchema(c.Parameters)
	if err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.Sandbox.Timeout <= 0 {
		c.Sandbox.Timeout = sandbox.DefaultTimeout
	}
	c.Sandbox.WorkspaceReadOnly = true
	// Kept whole up to the cap (head and tail halves of twice the cap can only cut
	// what is over it, which is refused anyway).
	c.Sandbox.OutputBytes = 2 * c.MaxOutputBytes
	return &Tool{c: c, schema: schema}, nil
}

// Spec implements fsm.Tool.
func (t *Tool) Spec() fsm.ToolSpec {
	return fsm.ToolSpec{Name: t.c.Name, Description: t.c.Description, Parameters: t.schema.JSON(), Timeout: t.c.Sandbox.Timeout}
}

// ValidateArguments implements fsm.ArgumentsValidator.
func (t *Tool) ValidateArguments(args json.RawMessage) error { return t.schema.Validate(args) }

// Call runs the program with args on stdin.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
	if err := t.schema.Validate(args); err != nil {
		return nil, err
	}
	res, err := sandbox.RunProgram(ctx, t.c.Sandbox, t.c.Argv, append(append([]byte{}, args...), '\n'))
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if res.TimedOut {
		return nil, &fsm.ToolError{Kind: fsm.ToolErrTimeout, Message: fmt.Sprintf("the program did not finish within %s and was killed", t.c.Sandbox.Timeout), Public: true}
	}
	if res.ExitCode != 0 {
		msg := fmt.Sprintf("the program exited with status %d", res.ExitCode)
		if tail := lastChars(strings.TrimSpace(res.Stderr), stderrTail); tail != "" {
			msg += ": " + tail
		}
		return nil, &fsm.ToolError{Kind: fsm.ToolErrFailed, Message: msg}
	}
	if len(res.Stdout) > t.c.MaxOutputBytes {
		return nil, &fsm.ToolError{Kind: fsm.ToolErrInvalidOutput, Message: fmt.Sprintf("the output is larger than %d bytes", t.c.MaxOutputBytes), Public: true}
	}
	out := bytes.TrimSpace([]byte(res.Stdout))
	switch {
	case len(out) == 0:
		return json.RawMessage("null"), nil
	case json.Valid(out):
		return out, nil
	case !utf8.Valid(out):
		return nil, &fsm.ToolError{Kind: fsm.ToolErrInvalidOutput, Message: "the output is neither JSON nor UTF-8 text", Public: true}
	}
	text, _ := json.Marshal(strings.TrimRight(res.Stdout, "\n"))
	return text, nil
}

// lastChars is the end of s, at most n bytes, cut at a character boundary.
func lastChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "…" + s
}
