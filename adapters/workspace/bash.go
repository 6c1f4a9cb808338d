package workspace

import (
	"context"
	"time"

	"github.com/turnlog/turnlog/fsm"
	"github.com/turnlog/turnlog/policy"
	"github.com/turnlog/turnlog/sandbox"
)

// MaxCommandTimeout caps the timeout a bash call may ask for.
const MaxCommandTimeout = 10 * time.Minute

type bashArgs struct {
	Command        string `json:"command" jsonschema:"description=A bash command, run in the workspace"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"minimum=1,maximum=600,description=Kill it after this long (default 60)"`
}

// SpecFor is the sandbox a mode gives commands: no network unless the mode allows it
// (network-allowlist has no filtering proxy yet, so it has none), and a read-only
// workspace in read-only mode.
func SpecFor(ws *sandbox.Workspace, access *policy.Engine) sandbox.Spec {
	mode := access.EffectiveMode()
	return sandbox.Spec{Workspace: ws.Dir(), Network: mode == policy.ModeWorkspaceWrite, WorkspaceReadOnly: mode == policy.ModeReadOnly}
}

// Bash is the bash tool: the command runs in the sandbox spec gives; the policy sees
// the command itself (it is classified by parsing it).
func Bash(spec sandbox.Spec) fsm.Tool {
	return &target[bashArgs]{newTool("bash", "Run a bash command in the workspace (sandboxed: limited files, network and resources). Returns exit code, stdout and stderr (kept head and tail), duration.",
		func(ctx context.Context, a bashArgs) (any, error) {
			s := spec
			if a.TimeoutSeconds > 0 {
				s.Timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, MaxCommandTimeout)
			}
			return sandbox.Run(ctx, s, a.Command)
		}), func(a bashArgs) fsm.PolicyCall { return fsm.PolicyCall{Shell: a.Command} }}
}
