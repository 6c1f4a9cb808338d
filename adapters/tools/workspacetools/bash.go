package workspacetools

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// SpecFor is the sandbox the app's policy gives commands: a read-only workspace in
// read-only mode; the network as the policy's network axis says — none (off), through
// a proxy that reaches only the hosts an allow rule names for the calling agent
// (allowlist), or the machine's (host, only when configured). neverDial are
// addresses no command may reach even through the proxy (turnlog's own listeners).
func SpecFor(ws *sandbox.Workspace, access *policy.Engine, neverDial ...string) sandbox.Spec {
	spec := sandbox.Spec{Workspace: ws.Dir(), WorkspaceReadOnly: access.EffectiveMode() == policy.ModeReadOnly,
		Network: access.EffectiveNetwork() == policy.NetworkHost, Mechanism: access.Mechanism, NeverDial: neverDial,
		MaskCache: &sandbox.MaskCache{}, GitWritable: access.GitWrites}
	if access.EffectiveNetwork() == policy.NetworkAllowlist {
		spec.AllowHost = allowHost(access)
	}
	return spec
}

// allowHost lets the proxy through to the hosts the policy allows the calling agent.
func allowHost(access *policy.Engine) sandbox.HostCheck { return AllowHost(access, "bash") }

// AllowHost lets a tool's proxy through to the hosts the policy allows the calling
// agent with that tool.
func AllowHost(access *policy.Engine, tool string) sandbox.HostCheck {
	return func(ctx context.Context, host string) error {
		call, _ := fsm.CallInfoFrom(ctx)
		v := access.Host(policy.Subject{Agent: call.Agent, Tool: tool}, host)
		if v.Decision != policy.Allow {
			return errors.New(v.Reason)
		}
		return nil
	}
}

// Bash is the bash tool: the command runs in the sandbox spec gives; the policy sees
// the command itself (it is classified by parsing it). A call a person approved runs,
// where the network is off, behind the proxy opened to the hosts the policy allows
// (what policy.Engine.NetworkGrant told the reviewer).
// With wss the command runs in the workspace of the call (spec's is the root's
// then); nil keeps spec's.
func Bash(spec sandbox.Spec, access *policy.Engine, wss *Workspaces) fsm.Tool {
	return &target[bashArgs]{newTool("bash", "Run a bash command in the workspace (sandboxed: limited files, network and resources). Returns exit code, stdout and stderr (kept head and tail), duration.",
		func(ctx context.Context, a bashArgs) (any, error) {
			s := spec
			if wss != nil {
				ws, err := wss.For(ctx)
				if err != nil {
					return nil, err
				}
				s.Workspace, s.MaskCache = ws.Dir(), wss.MaskCache(ws)
				if s.Home, err = wss.Home(ws); err != nil {
					return nil, err
				}
			}
			if call, _ := fsm.CallInfoFrom(ctx); call.Approved && access != nil && access.EffectiveNetwork() == policy.NetworkOff {
				s.AllowHost = allowHost(access)
			}
			if a.TimeoutSeconds > 0 {
				s.Timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, MaxCommandTimeout)
			}
			// What the apply replaces is kept until the call's result is durable: a
			// crash before then takes the apply back (Recover).
			call, _ := fsm.CallInfoFrom(ctx)
			s.SettleLater, s.ApplyTag = true, ApplyTag(call)
			res, err := sandbox.Run(ctx, s, a.Command)
			if err == nil {
				root, caps := s.Workspace, DefaultUndoCaps
				if wss != nil {
					root, caps = wss.Root().Dir(), wss.UndoCaps()
				}
				// What the apply changed goes in the log with the result, or the apply
				// is taken back: no change on disk is left unrecorded.
				if rerr := recordApply(ctx, res, root, s.Workspace, caps); rerr != nil {
					res.Settle(false)
					return nil, fmt.Errorf("the command's changes to the workspace were taken back, as what they were could not be recorded: %w", rerr)
				}
			}
			if res != nil && !fsm.OnRecorded(ctx, func(recorded bool) { res.Settle(recorded) }) {
				res.Settle(true)
			}
			if err == nil && res.Canceled {
				return nil, fmt.Errorf("the command was stopped (every process it started was killed): %w", context.Cause(ctx))
			}
			return res, err
		}), func(a bashArgs) fsm.PolicyCall { return fsm.PolicyCall{Shell: a.Command} }}
}

// ApplyTag names a call in the journal of the apply of its command's writes.
func ApplyTag(call fsm.CallInfo) string {
	return strings.Join([]string{call.Session, call.Turn, call.Path}, "\n")
}

// ParseApplyTag is the session, turn and path an ApplyTag names.
func ParseApplyTag(tag string) (session, turn, path string, ok bool) {
	parts := strings.Split(tag, "\n")
	if len(parts) != 3 || parts[0] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}
