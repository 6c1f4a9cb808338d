package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
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
// namespace of its own) or the machine's: behind the allowlist proxy, use NewServer.
// Its workspace is read-only (what it keeps goes to its DataDir).
func Command(spec Spec, argv []string) (*exec.Cmd, error) {
	if spec.AllowHost != nil {
		return nil, &Error{Msg: "a network allowlist needs the proxy: use NewServer"}
	}
	cmd, spec, err := prepareServer(spec, argv, !spec.Network)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(spec)
	cmd.Env = append(cmd.Env, specEnv+"="+string(raw))
	return cmd, nil
}

// prepareServer is the helper set up for a long-lived program, without the spec in
// its environment yet, and the spec completed (defaults, cgroups).
func prepareServer(spec Spec, argv []string, ownNetwork bool) (*exec.Cmd, Spec, error) {
	spec.WorkspaceReadOnly = true
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
	if len(argv) == 0 {
		return nil, spec, &Error{Msg: "no program to run"}
	}
	// A server's groups are named after it, so that a restart reuses them (they
	// outlive its process, which the caller waits for).
	sum := sha256.Sum256([]byte(spec.Workspace + "\x00" + spec.DataDir + "\x00" + strings.Join(argv, "\x00")))
	groups, err := commandCgroups(spec, "turnlog-server-"+hex.EncodeToString(sum[:8]))
	if err != nil {
		return nil, spec, err
	}
	spec.CgroupProcs = groups.procs()
	cmd, err := helperCommand(spec, argv, ownNetwork, nil)
	return cmd, spec, err
}

// Server is a long-lived program in the sandbox whose network may also be the
// allowlist proxy, which then lives as long as the program: set Cmd's stdin and
// stdout up, Start it, and Close it once the program has ended.
type Server struct {
	Cmd     *exec.Cmd
	spec    Spec
	behind  bool
	env     []string
	proxied *proxy
	ln      net.Listener
	release func()
}

// NewServer sets a long-lived program up as Command does, with the spec's network:
// off, the machine's, or — with AllowHost — the proxy, asked about each host with
// the context Start is given.
func NewServer(spec Spec, argv []string) (*Server, error) {
	if spec.Network || spec.AllowHost == nil {
		spec.AllowHost = nil // the machine's network needs no proxy
		cmd, err := Command(spec, argv)
		return &Server{Cmd: cmd}, err
	}
	cmd, spec, err := prepareServer(spec, argv, false) // started in the proxy's namespace
	if err != nil {
		return nil, err
	}
	return &Server{Cmd: cmd, spec: spec, behind: true, env: cmd.Env}, nil
}

// Start starts the program; behind the proxy, ctx is what its host checks see.
func (s *Server) Start(ctx context.Context) error {
	if !s.behind {
		err := s.Cmd.Start()
		closeExtraFiles(s.Cmd)
		return err
	}
	ln, release, err := startBehindProxy(s.Cmd, func(port int) { s.Cmd.Env = withSpec(s.env, &s.spec, port) })
	closeExtraFiles(s.Cmd)
	if err != nil {
		return &Error{Msg: "cannot start a program behind the network proxy: " + err.Error()}
	}
	s.ln, s.release = ln, release
	s.proxied = newProxy(ctx, s.spec)
	go s.proxied.serve(ln)
	return nil
}

// Close ends the proxy (once the program has ended) and says which hosts it asked
// for.
func (s *Server) Close() []HostDecision {
	if s.proxied == nil {
		return nil
	}
	hosts, _ := s.proxied.close(s.ln)
	s.release()
	s.proxied = nil
	return hosts
}
