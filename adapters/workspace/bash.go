package workspace

import (
	"context"
	"errors"
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

// SpecFor is the sandbox a mode gives commands: the network in workspace-write only;
// in network-allowlist, a proxy that reaches only the hosts an allow rule names (for
// the calling agent); a read-only workspace in read-only mode.
func SpecFor(ws *sandbox.Workspace, access *policy.Engine) sandbox.Spec {
	mode := access.EffectiveMode()
	spec := sandbox.Spec{Workspace: ws.Dir(), Network: mode == policy.ModeWorkspaceWrite, WorkspaceReadOnly: mode == policy.ModeReadOnly,
		Mechanism: access.Mechanism}
	if mode == policy.ModeNetworkAllowlist {
		spec.AllowHost = func(ctx context.Context, host string) error {
			call, _ := fsm.CallInfoFrom(ctx)
			v := access.Host(policy.Subject{Agent: call.Agent, Tool: "bash"}, host)
			if v.Decision != policy.Allow {
				return errors.New(v.Reason)
			}
			return nil
		}
	}
	return spec
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
