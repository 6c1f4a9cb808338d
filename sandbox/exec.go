package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Spec says how a command runs: where, with what limits, and whether it may reach
// the network. The zero limits mean the defaults.
type Spec struct {
	Workspace string `json:"workspace"` // the command's working directory
	// DataDir is a long-lived program's own directory, read-write, outside every
	// workspace (an MCP server's data): bound as it is, writes landing at once, set
	// as HOME and TURNLOG_DATA_DIR. It must belong to CommandUID.
	DataDir string `json:"data_dir,omitempty"`
	// Home is the command's HOME: a directory of CommandUID's outside every
	// workspace (PrepareDataDir makes one), bound read-write as it is and kept
	// between commands, so that a repository's own .gitconfig or .npmrc is never
	// user configuration. Empty: an empty directory in the command's private /tmp.
	Home string `json:"home,omitempty"`
	// Env adds NAME=value entries to the command's environment (variables a tool's
	// configuration names); turnlog's own sandbox variables cannot be set. They are
	// set for the command alone, once it is confined and limited — never for the
	// helper, which runs as root (LD_PRELOAD there would be root's), nor for the
	// shell that sets the limits.
	Env []string `json:"env,omitempty"`
	// WorkspaceReadOnly closes the workspace to writes too (mode read-only).
	WorkspaceReadOnly bool `json:"workspace_read_only,omitempty"`
	Network           bool `json:"network"` // false: a network namespace of its own (nothing to connect to)
	// AllowHost, with Network false, opens one way out: an HTTP proxy inside the
	// command's network namespace (HTTP_PROXY and HTTPS_PROXY name it) that reaches
	// only the hosts AllowHost lets through (mode network-allowlist).
	AllowHost HostCheck `json:"-"`
	// GitWritable lets commands write a repository's .git (commit, branch) — never its
	// config, hooks, info or pointers to other directories (gitNeverWritable), nor
	// create a repository. Without it every .git is read-only.
	GitWritable bool `json:"git_writable,omitempty"`
	// MaskCache, when set, remembers what was found to mask in the workspace's
	// directories, so that only changed ones are read again (one per workspace).
	MaskCache *MaskCache `json:"-"`
	// NeverDial are host:port addresses the proxy never connects to, whatever
	// AllowHost says: turnlog's own listeners.
	NeverDial []string `json:"-"`
	// ProxyConnections and ProxyRate cap what the command may hold open through the
	// proxy at once, and open a second (0: DefaultProxyConnections,
	// DefaultProxyRate); past them it is answered 503.
	ProxyConnections int `json:"-"`
	ProxyRate        int `json:"-"`
	// Dial is how the proxy connects out, Resolve how it finds a host's addresses;
	// nil is the system's.
	Dial        func(ctx context.Context, network, addr string) (net.Conn, error) `json:"-"`
	Resolve     func(ctx context.Context, host string) ([]net.IP, error)          `json:"-"`
	ProxyPort   int                                                               `json:"proxy_port,omitempty"` // set by Run
	Timeout     time.Duration                                                     `json:"-"`
	CPUSeconds  uint64                                                            `json:"cpu_seconds"`
	MemoryBytes uint64                                                            `json:"memory_bytes"` // address space, per process
	// TreeMemoryBytes caps the memory of the whole process tree (its processes and
	// the pages it writes to its tmpfs layers), through a cgroup.
	TreeMemoryBytes uint64 `json:"tree_memory_bytes"`
	// CgroupProcs are the cgroup.procs files of the command's groups (set by Run and
	// Command): the helper joins them first.
	CgroupProcs []string `json:"cgroup_procs,omitempty"`
	FileBytes   uint64   `json:"file_bytes"` // largest file it may write
	// WriteBytes is what a command may write to the workspace in all (its write
	// layer's size): past it writes fail with ENOSPC. WriteEntries caps the entries
	// it may leave there (files, directories, symlinks, deletions, directories
	// changed below): past it creating one fails with ENOSPC. Both are counted again
	// at apply time (each name of a hard link is a file of its own there).
	WriteBytes   uint64 `json:"write_bytes"`
	WriteEntries uint64 `json:"write_entries"`
	// WorkspaceBytes and WorkspaceEntries cap what the workspace holds in all: an
	// apply that would grow it past either fails whole. 0: the defaults.
	WorkspaceBytes   uint64 `json:"workspace_bytes"`
	WorkspaceEntries uint64 `json:"workspace_entries"`
	// ApplyTag names the tool call whose result the apply of the command's writes
	// is, in its journal: a start after a crash asks whether that result was
	// recorded (RecoverApplies) to keep a finished apply or take it back.
	ApplyTag string `json:"apply_tag,omitempty"`
	// SettleLater keeps what the apply replaced until the caller calls
	// Result.Settle, once the result is durable; without it Run settles at once.
	SettleLater bool `json:"-"`
	// CommandStart is set by Run: the workspace file system's clock as the command
	// started (seconds, nanoseconds). A path changed in the workspace since, that
	// the command changed too, is refused rather than overwritten.
	CommandStart [2]int64 `json:"command_start,omitempty"`
	MaxProcesses int      `json:"max_processes"` // processes alive at once, at least MinProcesses
	OutputBytes  int      `json:"-"`             // kept per stream, head and tail
	// ReadOnly are directories the command may read (the system's programs and
	// libraries); everything else outside the workspace is closed to it.
	ReadOnly []string `json:"read_only"`
	// Mechanism confines the filesystem: MechanismLandlock (default) or
	// MechanismBubblewrap.
	Mechanism string `json:"mechanism,omitempty"`
	// Unavailable names a mechanism to treat as missing (a probe override): the run
	// must then fail closed.
	Unavailable string `json:"unavailable,omitempty"`

	// Set only by tests: the helper's apply paused (pauseEnv) after a share of its
	// steps ("3/10"), saying so on a pipe; the helper's process id once it started.
	testPause   *os.File
	testShare   string
	testStarted func(pid int)
	testEnded   func()
	testHelper  string // another binary to start as the helper (the benchmark's turnlog)
}

// Defaults for a Spec's zero fields.
const (
	DefaultTimeout     = 60 * time.Second
	DefaultCPUSeconds  = 60
	DefaultMemoryBytes = 1 << 30
	DefaultFileBytes   = 256 << 20
	DefaultWriteBytes  = 1 << 30
	// DefaultWriteEntries admits a command that makes 100,000 files in 10,000
	// directories, or removes a tree of 100,000 (npm install, git clone, tar x).
	DefaultWriteEntries = 250_000
	// DefaultWorkspaceBytes and DefaultWorkspaceEntries cap what commands may
	// grow a workspace to, on the host's disk.
	DefaultWorkspaceBytes   = 20 << 30
	DefaultWorkspaceEntries = 2_000_000
	DefaultTreeMemory       = 2 << 30
	DefaultProcesses        = 512
	DefaultOutputBytes      = 32 << 10
)

// SystemDirs are what a command may read outside the workspace by default.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"}

// envAllowed are the only variables a command gets from turnlog's environment: no
// secret the server holds ever reaches it.
var envAllowed = []string{"PATH", "LANG", "LC_ALL", "TZ", "TERM"}

// Result is what a command did.
type Result struct {
	ExitCode   int    `json:"exit_code"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	DurationMS int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	// Canceled: the caller's context ended and the command was killed with every
	// process it started.
	Canceled  bool   `json:"canceled,omitempty"`
	Truncated bool   `json:"truncated"`
	Reason    string `json:"truncated_reason,omitempty"`
	// Network lists the hosts the command asked the proxy for (network-allowlist);
	// ConnectionsRefused counts the connections to the proxy it refused past its
	// caps (Spec.ProxyConnections, ProxyRate, ProxyTotal).
	Network            []HostDecision `json:"network,omitempty"`
	ConnectionsRefused int            `json:"connections_refused,omitempty"`
	// Changes are what the command changed in the workspace (applied after it ended),
	// and what of it was refused; nil when it changed nothing.
	Changes *Changes `json:"changes,omitempty"`
	// ApplyDuration is how long applying the changes took the helper; Phases how
	// long each step of the run took (turnlog's and the helper's).
	ApplyDuration time.Duration `json:"-"`
	Phases        []Phase       `json:"-"`

	staged *staging // kept for Settle (Spec.SettleLater)
	// held: the caller holds the workspace's lock (WriteFiles), which FileChanges
	// then does not take again.
	held bool
}

// Applied lists every path the apply changed, one entry a step (a removed tree is
// one), from its journal — the full plan, which reaches turnlog through a file
// rather than the helper's report — while Run keeps it for Settle.
func (r *Result) Applied() ([]string, error) {
	if r == nil || r.staged == nil {
		return nil, nil
	}
	r.staged.mu.Lock()
	defer r.staged.mu.Unlock()
	if r.staged.settled {
		return nil, errors.New("the apply was settled: its journal is gone")
	}
	_, ops, _, err := readJournal(int(r.staged.dir.Fd()))
	if errors.Is(err, errNoJournal) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ops))
	for _, o := range ops {
		if o.Kind != opTimes {
			out = append(out, o.Rel)
		}
	}
	return out, nil
}

// Settle ends what Run kept of the apply (Spec.SettleLater): with recorded — the
// call's result is durable — what the apply replaced goes; without, the apply is
// taken back (the result never reached the log, so the workspace must not show it).
// Only the first call acts.
func (r *Result) Settle(recorded bool) error {
	if r == nil || r.staged == nil {
		return nil
	}
	return r.staged.settle(recorded)
}

// SettleHeld is Settle for a writer that still holds the workspace's lock
// (WriteFiles): a take-back does not wait for the lock.
func (r *Result) SettleHeld(recorded bool) error {
	if r == nil || r.staged == nil {
		return nil
	}
	return r.staged.settleAs(recorded, true)
}

// Error is a sandbox that could not be set up: the command did not run.
type Error struct{ Msg string }

func (e *Error) Error() string { return "sandbox: " + e.Msg + " (the command did not run)" }

const (
	helperEnv  = "TURNLOG_SANDBOX_HELPER"
	specEnv    = "TURNLOG_SANDBOX_SPEC"
	helperFail = 125
	failPrefix = "turnlog-sandbox-error: "
	killedCode = -1
)

// Run runs a bash command in the sandbox: its own PID namespace (every descendant
// dies with it, setsid ones too), its own network namespace unless Network, the
// filesystem limited by Landlock to the workspace (read-write) and ReadOnly, CPU,
// memory, file-size and process-count limits, an environment from an allowlist, a timeout, and
// output kept head and tail. If any of that cannot be applied, it fails closed.
func Run(ctx context.Context, spec Spec, command string) (*Result, error) {
	return run(ctx, spec, []string{"bash", "-c", command, "bash"}, nil)
}

// RunProgram is Run for a program and its arguments, with stdin as its standard
// input (a command tool's arguments).
func RunProgram(ctx context.Context, spec Spec, argv []string, stdin []byte) (*Result, error) {
	if len(argv) == 0 {
		return nil, &Error{Msg: "no program to run"}
	}
	return run(ctx, spec, argv, stdin)
}

func run(ctx context.Context, spec Spec, argv []string, stdin []byte) (*Result, error) {
	select {
	case commandSlots <- struct{}{}:
		defer func() { <-commandSlots }()
	case <-ctx.Done():
		return nil, &Error{Msg: fmt.Sprintf("stopped while waiting for one of the %d commands running at once to end: %v", MaxCommands, context.Cause(ctx))}
	}
	ph := phases{began: time.Now()}
	spec = withDefaults(spec)
	groups, err := commandCgroups(spec, "")
	if err != nil {
		return nil, err
	}
	defer func() {
		if groups != nil { // else the apply's staging directory gives it back as it is settled
			cgroupPool.giveBack(groups)
		}
	}()
	ph.mark("turnlog: the command's cgroups")
	spec.CgroupProcs = groups.procs()
	var st *staging
	if !spec.WorkspaceReadOnly {
		if st, err = openStaging(spec.Workspace); err != nil {
			return nil, &Error{Msg: err.Error()}
		}
		spec.CommandStart = [2]int64{st.since.Sec, st.since.Nsec}
		defer func() {
			if st != nil {
				st.settle(false) // an error before the command ran: nothing to keep
			}
		}()
	}
	ph.mark("turnlog: the staging directory")
	behindProxy := !spec.Network && spec.AllowHost != nil
	// Behind the proxy the helper is started inside the proxy's network namespace.
	cmd, err := helperCommand(spec, argv, !spec.Network && !behindProxy, st)
	if err != nil {
		return nil, err
	}
	ph.mark("turnlog: the masks found, the helper set up")
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	defer closeExtraFiles(cmd) // on every path: the helper holds its own copies once started
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	defer reportR.Close()
	cmd.ExtraFiles = append(cmd.ExtraFiles, reportW)
	env := append(cmd.Env, fmt.Sprintf("%s=%d", reportEnv, 2+len(cmd.ExtraFiles)))
	stdout, stderr := newHeadTail(spec.OutputBytes), newHeadTail(spec.OutputBytes)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 2 * time.Second
	prepare := func(port int) { cmd.Env = withSpec(env, &spec, port) }
	began := time.Now()
	var proxied *proxy
	var ln net.Listener
	if behindProxy {
		var release func()
		ln, release, err = startBehindProxy(cmd, prepare)
		if err != nil {
			return nil, &Error{Msg: "cannot start a command behind the network proxy: " + err.Error()}
		}
		defer release()
		proxied = newProxy(ctx, spec)
		go proxied.serve(ln)
		defer func() { proxied.close(ln) }()
	} else {
		prepare(0)
		if err := cmd.Start(); err != nil {
			return nil, &Error{Msg: "cannot start an isolated process: " + err.Error()}
		}
	}
	closeExtraFiles(cmd) // the report pipe's writer among them: the helper's copy is the only one left
	ph.mark("turnlog: the helper started (fork, exec, namespaces)")
	if spec.testStarted != nil {
		spec.testStarted(cmd.Process.Pid)
	}
	// The helper says "ended" on the report pipe as soon as the command has ended: from
	// then on the timeout no longer runs — what remains is applying its writes, which a
	// kill must not cut short — and then sends the report.
	ended, reported := make(chan struct{}), make(chan []byte, 1)
	go func() {
		br := bufio.NewReader(io.LimitReader(reportR, 1<<20))
		if line, err := br.ReadString('\n'); err == nil && line == endedLine {
			if spec.testEnded != nil {
				spec.testEnded()
			}
			close(ended)
		}
		raw, _ := io.ReadAll(br)
		reported <- raw
	}()
	timer := time.NewTimer(spec.Timeout)
	defer timer.Stop()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	res := &Result{}
	select {
	case err = <-done:
	case <-ended:
		err = <-done
	case <-timer.C:
		res.TimedOut = true
		err = stopHelper(cmd, done, ended)
	case <-ctx.Done():
		res.Canceled = true
		err = stopHelper(cmd, done, ended)
	}
	res.DurationMS = time.Since(began).Milliseconds()
	if proxied != nil {
		res.Network, res.ConnectionsRefused = proxied.close(ln)
	}
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	var rep helperReport
	if raw := <-reported; len(raw) > 0 {
		json.Unmarshal(raw, &rep)
	}
	if c := rep.Changes; c.Count > 0 || c.RefusedCount > 0 || c.Failed != "" {
		res.Changes = &c
	}
	res.ApplyDuration = time.Duration(rep.ApplyNanos)
	helperWall := time.Since(ph.list[len(ph.list)-1].since)
	var helperSum time.Duration
	for _, p := range rep.Phases {
		helperSum += p.Took
	}
	ph.list = append(ph.list, Phase{Name: "helper: the binary's own start (the Go runtime, package init), its exit, the report", Took: max(0, helperWall-helperSum)})
	ph.list = append(ph.list, rep.Phases...)
	settling := time.Now()
	if st != nil {
		st.moved = rep.Moved
		if err := res.keep(st, spec.SettleLater); err != nil {
			return nil, &Error{Msg: err.Error()}
		}
		if res.staged != nil {
			st.mu.Lock()
			st.groups, groups = groups, nil
			st.mu.Unlock()
		}
		st = nil
	}
	res.Phases = append(ph.list, Phase{Name: "turnlog: the staging directory settled", Took: time.Since(settling)})
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	default:
		return nil, &Error{Msg: err.Error()}
	}
	if res.ExitCode == helperFail && strings.Contains(res.Stderr, failPrefix) {
		msg := res.Stderr[strings.Index(res.Stderr, failPrefix)+len(failPrefix):]
		return nil, &Error{Msg: strings.TrimSpace(msg)}
	}
	if res.TimedOut {
		res.ExitCode = killedCode
	}
	var cut []string
	if stdout.cut() > 0 {
		cut = append(cut, fmt.Sprintf("stdout: %d bytes cut from the middle", stdout.cut()))
	}
	if stderr.cut() > 0 {
		cut = append(cut, fmt.Sprintf("stderr: %d bytes cut from the middle", stderr.cut()))
	}
	if res.TimedOut {
		cut = append(cut, fmt.Sprintf("killed after the %s timeout", spec.Timeout))
	}
	if len(cut) > 0 {
		res.Truncated, res.Reason = true, strings.Join(cut, "; ")
	}
	return res, nil
}

// withSpec is env with the proxy's address (when port is not 0) and the spec the
// helper reads, which then knows the port too.
func withSpec(env []string, spec *Spec, port int) []string {
	spec.ProxyPort = port
	env = append([]string{}, env...)
	if port != 0 {
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
			env = append(env, k+"="+url)
		}
	}
	raw, _ := json.Marshal(spec)
	return append(env, specEnv+"="+string(raw))
}

// commandCgroups makes a command's groups (see cgroup.go), or says why it cannot: the
// command then does not run.
func commandCgroups(spec Spec, name string) (*cgroupTree, error) {
	if spec.Unavailable == "cgroup" {
		return nil, &Error{Msg: "no cgroup controllers here, and this sandbox requires them"}
	}
	var t *cgroupTree
	var err error
	if name == "" {
		t, err = cgroupPool.get(spec.TreeMemoryBytes, spec.MaxProcesses+1) // +1: the helper
	} else if t, err = newCgroupTree(name, spec.TreeMemoryBytes, spec.MaxProcesses+1); err == nil {
		cgroupPool.keepNamed(t)
	}
	if err != nil {
		return nil, &Error{Msg: "cannot cap the command's process tree: " + err.Error()}
	}
	return t, nil
}

// closeExtraFiles closes the descriptors handed to the helper but the shared id
// mapping (its first), once: the helper holds its own copies once it started.
func closeExtraFiles(cmd *exec.Cmd) {
	if len(cmd.ExtraFiles) > 1 {
		for _, f := range cmd.ExtraFiles[1:] {
			f.Close()
		}
		cmd.ExtraFiles = cmd.ExtraFiles[:1]
	}
}

// keep settles what the helper left in the staging directory, or keeps it for the
// caller's Settle: an apply the helper did not finish (it was killed) is taken back
// at once.
func (res *Result) keep(st *staging, later bool) error {
	applied, complete, err := journalState(int(st.dir.Fd()))
	switch {
	case err != nil:
		st.settle(false)
		return err
	case applied && !complete:
		why := "the helper ended in the middle of applying the command's changes"
		if res.Changes != nil && res.Changes.Failed != "" {
			why = res.Changes.Failed // the helper's own account
		}
		conflicts, err := st.rollback(false)
		switch {
		case err != nil:
			st.close() // left for the next start (or apply) to take back
			res.Changes = &Changes{Failed: why + "; taking what was applied back failed (turnlog tries again at its next start): " + err.Error()}
			return nil
		case len(conflicts) > 0:
			res.Changes = &Changes{Failed: fmt.Sprintf("%s; what was applied was taken back but for %d paths changed since, whose earlier content is kept in %s/%s%s: %s",
				why, len(conflicts), stagingDirName, leftPrefix, st.id, strings.Join(conflicts[:min(len(conflicts), 5)], "; "))}
		default:
			res.Changes = &Changes{Failed: "nothing was applied: " + strings.TrimPrefix(why, "nothing was applied: ") + "; what had been applied was taken back"}
		}
		return st.settle(true)
	case applied && later:
		res.staged = st
		return nil
	}
	return st.settle(true)
}

// stopGrace is how long the helper may take, once asked to stop, to end the command
// before it is killed. Once the command has ended the helper applies its writes,
// which nothing cuts short.
const stopGrace = 10 * time.Second

// stopHelper asks the helper to end the command — it kills every process of the
// namespace and applies what was written — and kills it if the command does not end
// in time.
func stopHelper(cmd *exec.Cmd, done chan error, ended <-chan struct{}) error {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-ended:
		return <-done
	case <-time.After(stopGrace):
		cmd.Process.Kill() // the namespace's first process: the kernel kills the rest
		return <-done
	}
}

// helperCommand is the helper set up to confine argv (wrapped in bwrap when the spec
// says so): in the workspace, with the allowlisted environment, in new PID and mount
// namespaces — and a network namespace of its own when ownNetwork. The caller adds
// the spec to its environment (specEnv) before starting it.
func helperCommand(spec Spec, argv []string, ownNetwork bool, st *staging) (*exec.Cmd, error) {
	exe, err := helperPath()
	if err != nil {
		return nil, &Error{Msg: "cannot find the turnlog binary to start the sandbox: " + err.Error()}
	}
	if spec.testHelper != "" {
		exe = spec.testHelper
	}
	if err := checkMechanism(spec); err != nil {
		return nil, err
	}
	userns, err := sharedIDMap()
	if err != nil {
		return nil, &Error{Msg: "cannot make the id mapping of the workspace: " + err.Error()}
	}
	masks, err := findMasks(spec.Workspace, spec.MaskCache, spec.GitWritable)
	if err != nil {
		return nil, &Error{Msg: "cannot read the workspace for what to mask: " + err.Error()}
	}
	raw, _ := json.Marshal(masks)
	// A memory file, not a pipe: however long the list, nothing waits for the helper
	// to read it.
	mfd, err := unix.MemfdCreate("turnlog-masks", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, &Error{Msg: "the list of masks: " + err.Error()}
	}
	masksFile := os.NewFile(uintptr(mfd), "masks")
	if _, err := masksFile.Write(raw); err != nil {
		masksFile.Close()
		return nil, &Error{Msg: "the list of masks: " + err.Error()}
	}
	if _, err := masksFile.Seek(0, 0); err != nil {
		masksFile.Close()
		return nil, &Error{Msg: "the list of masks: " + err.Error()}
	}
	cmd := exec.Command(exe, argv...)
	cmd.ExtraFiles = []*os.File{userns, masksFile}
	cmd.Dir = spec.Workspace
	for _, kv := range spec.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.HasPrefix(k, "TURNLOG_SANDBOX") {
			return nil, &Error{Msg: fmt.Sprintf("the environment entry %q cannot be given to a command", k)}
		}
	}
	home := tmpHome
	for _, d := range []string{spec.DataDir, spec.Home} {
		if d == "" {
			continue
		}
		if err := checkDataDir(d); err != nil {
			return nil, err
		}
		home = d
	}
	// git reads no system configuration, and as its user's the one turnlog writes.
	cmd.Env = append(allowedEnv(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+gitConfigFile,
		helperEnv+"="+helperOn, usernsEnv+"=3", masksEnv+"=4")
	if st != nil {
		ws, dir, err := st.handOff()
		if err != nil {
			masksFile.Close()
			return nil, &Error{Msg: "the staging directory: " + err.Error()}
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, ws, dir)
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d:%d:%s", stagingEnv, 1+len(cmd.ExtraFiles), 2+len(cmd.ExtraFiles), st.id))
		if spec.testPause != nil {
			w, err := dupFile(spec.testPause)
			if err != nil {
				return nil, &Error{Msg: err.Error()}
			}
			cmd.ExtraFiles = append(cmd.ExtraFiles, w)
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s:%d", pauseEnv, spec.testShare, 2+len(cmd.ExtraFiles)))
		}
	}
	// An IPC namespace of its own: no SysV segment, queue or semaphore set of another
	// command's is there to see, and its own die with it (and uncharge its cgroup).
	flags := uintptr(syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC)
	if ownNetwork {
		flags |= syscall.CLONE_NEWNET
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	return cmd, nil
}

func withDefaults(s Spec) Spec {
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	orDefault(&s.CPUSeconds, DefaultCPUSeconds)
	orDefault(&s.MemoryBytes, DefaultMemoryBytes)
	orDefault(&s.FileBytes, DefaultFileBytes)
	orDefault(&s.TreeMemoryBytes, DefaultTreeMemory)
	orDefault(&s.WriteBytes, DefaultWriteBytes)
	orDefault(&s.WriteEntries, DefaultWriteEntries)
	orDefault(&s.WorkspaceBytes, DefaultWorkspaceBytes)
	orDefault(&s.WorkspaceEntries, DefaultWorkspaceEntries)
	orDefault(&s.MaxProcesses, DefaultProcesses)
	s.MaxProcesses = max(s.MaxProcesses, MinProcesses)
	if s.OutputBytes <= 0 {
		s.OutputBytes = DefaultOutputBytes
	}
	if s.ReadOnly == nil {
		s.ReadOnly = SystemDirs
	}
	return s
}

// orDefault sets a zero limit to its default.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func allowedEnv() []string {
	var out []string
	for _, k := range envAllowed {
		if v, ok := os.LookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// headTail keeps the first and the last half of what is written to it.
type headTail struct {
	half  int
	head  []byte
	tail  []byte // a ring once full
	start int
	total int
}

func newHeadTail(n int) *headTail { return &headTail{half: max(n/2, 1)} }

func (h *headTail) Write(p []byte) (int, error) {
	h.total += len(p)
	for _, b := range p {
		switch {
		case len(h.head) < h.half:
			h.head = append(h.head, b)
		case len(h.tail) < h.half:
			h.tail = append(h.tail, b)
		default:
			h.tail[h.start] = b
			h.start = (h.start + 1) % h.half
		}
	}
	return len(p), nil
}

func (h *headTail) cut() int { return max(0, h.total-len(h.head)-len(h.tail)) }

func (h *headTail) String() string {
	tail := append(append([]byte(nil), h.tail[h.start:]...), h.tail[:h.start]...)
	if n := h.cut(); n > 0 {
		return string(h.head) + fmt.Sprintf("\n…[%d bytes cut]…\n", n) + string(tail)
	}
	return string(h.head) + string(tail)
}

// checkDataDir refuses a data directory that is not a directory of CommandUID's own
// (not a symlink, not shared with anyone else).
func checkDataDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return &Error{Msg: "the data directory: " + err.Error()}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return &Error{Msg: fmt.Sprintf("the data directory %s is not a directory", dir)}
	case !ok || st.Uid != CommandUID || fi.Mode().Perm()&0o077 != 0:
		return &Error{Msg: fmt.Sprintf("the data directory %s must belong to uid %d with mode 0700 (PrepareDataDir makes it so)", dir, CommandUID)}
	}
	return nil
}

// PrepareDataDir makes dir a data directory: created if missing (its parents 0711,
// so only a path that is known reaches it), owned by CommandUID, mode 0700 — changed
// through a descriptor opened without following a symlink, so a link planted in its
// place changes nothing else. What a program left there with a setuid or setgid bit
// loses it (the directory is mounted nosuid for the program too).
func PrepareDataDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("data directory %s: %w (a directory, not a symlink, is required)", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, CommandUID, CommandUID); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		return err
	}
	return stripSetID(dir)
}

// stripSetID clears setuid and setgid bits below dir, following no symlink.
func stripSetID(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) == 0 {
			return nil
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // gone, or swapped for a link: nothing of ours to change
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil
		}
		return unix.Fchmod(fd, st.Mode&0o777)
	})
}

// dupFile is another descriptor of f's open file.
func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
