package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"strings"
)

// What a long-lived program in the sandbox gets by default: an hour of CPU, and 4 GiB
// of address space (a JavaScript runtime reserves far more than it uses).
const (
	ServerCPUSeconds  = 3600
	ServerMemoryBytes = 4 << 30
	ServerTreeMemory  = 4 << 30
)

// Command sets a long-lived program (an MCP server speaking on stdin and stdout) up
// to run in the sandbox — the same namespaces, Landlock, limits and environment as
// Run's commands — and leaves starting it, and its stdin and stdout, to the caller.
// Killing the process ends every process it started. The network is either off (a
// namespace of its own) or the machine's: a proxied allowlist is for commands only.
func Command(spec Spec, argv []string) (*exec.Cmd, error) {
	if spec.CPUSeconds == 0 {
		spec.CPUSeconds = ServerCPUSeconds
	}
	if spec.MemoryBytes == 0 {
		spec.MemoryBytes = ServerMemoryBytes
	}
	if spec.TreeMemoryBytes == 0 {
		spec.TreeMemoryBytes = ServerTreeMemory
	}
	spec = withDefaults(spec)
	if spec.AllowHost != nil {
		return nil, &Error{Msg: "a network allowlist needs the proxy, which only commands get"}
	}
	if len(argv) == 0 {
		return nil, &Error{Msg: "no program to run"}
	}
	// A server's groups are named after it, so that a restart reuses them (they
	// outlive its process, which the caller waits for).
	sum := sha256.Sum256([]byte(spec.Workspace + "\x00" + strings.Join(argv, "\x00")))
	groups, err := commandCgroups(spec, "turnlog-server-"+hex.EncodeToString(sum[:8]))
	if err != nil {
		return nil, err
	}
	spec.CgroupProcs = groups.procs()
	cmd, err := helperCommand(spec, argv, !spec.Network)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(spec)
	cmd.Env = append(cmd.Env, specEnv+"="+string(raw))
	return cmd, nil
}
