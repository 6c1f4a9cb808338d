package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	helperOn = "1" // helperEnv's value
	// reportEnv names the descriptor on which the helper reports the changes it
	// applied (a JSON Changes) before it exits.
	reportEnv = "TURNLOG_SANDBOX_REPORT"
	// endedLine is what the helper writes first on the report descriptor, as soon as
	// the command has ended (the changes are applied after).
	endedLine = "ended\n"
	// usernsEnv names the descriptor of the id-mapping user namespace (sharedIDMap).
	usernsEnv = "TURNLOG_SANDBOX_USERNS"
	// masksEnv names the descriptor from which the helper reads the workspace's masks
	// (a JSON []Mask, found by turnlog).
	masksEnv = "TURNLOG_SANDBOX_MASKS"
	// stagingEnv is "<workspace descriptor>:<staging descriptor>:<id>": the
	// workspace and the command's staging directory there (see staging.go).
	stagingEnv = "TURNLOG_SANDBOX_STAGING"
	// pauseEnv, set only by tests, is "<num>/<den>[+<duration>]:<descriptor>": once
	// the apply has done that share of its steps the helper writes "paused" there and
	// waits (to be killed, or that long).
	pauseEnv = "TURNLOG_SANDBOX_TEST_PAUSE"
)

// IsHelper says whether this process is the sandbox's helper (turnlog started itself
// to set a command up from inside its namespaces). main calls
// HelperMain then.
func IsHelper() bool { return os.Getenv(helperEnv) != "" }

// BecomeHelperIfAsked runs HelperMain (which never returns) when this process was
// started as the helper; a binary that runs sandboxed commands — turnlog, or a test
// binary — calls it first thing.
func BecomeHelperIfAsked() {
	if IsHelper() {
		HelperMain()
	}
}

// HelperMain is the sandbox's helper; it never returns. It runs as root in the
// command's new PID and mount namespaces: it joins the command's cgroups, sets the
// process limit, builds the command's root (the workspace shown through an id-mapped
// overlay, secrets masked, .git read-only) and starts the command confined, as
// CommandUID (startConfined). It stays the namespace's first process — out of the
// command's reach, since it is root and not dumpable —, reaps what the command
// leaves, and when the command ends (or turnlog asks with SIGTERM) kills every
// process left, applies what the command wrote to the workspace and reports it. Any step that fails ends the process with status 125 and the reason,
// so the command never runs unconfined.
func HelperMain() {
	ph := phases{began: time.Now()}
	var spec Spec
	if err := json.Unmarshal([]byte(os.Getenv(specEnv)), &spec); err != nil {
		fail("unreadable spec: %v", err)
	}
	var report *os.File
	if v := os.Getenv(reportEnv); v != "" {
		fd, err := strconv.Atoi(v)
		if err != nil {
			fail("unreadable report descriptor %q", v)
		}
		syscall.CloseOnExec(fd)
		report = os.NewFile(uintptr(fd), "report")
	}
	os.Unsetenv(reportEnv)
	userns, err := strconv.Atoi(os.Getenv(usernsEnv))
	if err != nil {
		fail("no id-mapping user namespace handed down")
	}
	syscall.CloseOnExec(userns)
	os.Unsetenv(usernsEnv)
	var masks []Mask
	if fd, err := strconv.Atoi(os.Getenv(masksEnv)); err != nil {
		fail("no masks handed down")
	} else {
		f := os.NewFile(uintptr(fd), "masks")
		if err := json.NewDecoder(f).Decode(&masks); err != nil {
			fail("unreadable masks: %v", err)
		}
		f.Close() // never the command's
	}
	os.Unsetenv(masksEnv)
	workspace, staging, stagingID := handedDirs(stagingEnv)
	afterOp := pauseAfter(os.Getenv(pauseEnv))
	os.Unsetenv(pauseEnv)
	ph.mark("helper: read its spec and masks")
	if err := joinCgroups(spec.CgroupProcs); err != nil {
		fail("cannot join the command's cgroups: %v", err)
	}
	ph.mark("helper: joined the cgroups")
	if spec.Unavailable == "pid_max" {
		fail("no per-namespace process limit here, and this sandbox requires one")
	}
	if err := limitProcesses(spec.MaxProcesses); err != nil {
		fail("cannot limit the number of processes: %v", err)
	}
	ph.mark("helper: limited processes")
	lay, err := enterPrivateRoot(spec, userns)
	if err != nil {
		fail("cannot set the command's filesystem up: %v", err)
	}
	ph.mark("helper: built the command's root")
	if err := applyMasks(spec.Workspace, masks); err != nil {
		fail("cannot hide the workspace's denied files: %v", err)
	}
	ph.mark("helper: masked")
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		fail("not dumpable: %v", errno)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	done := make(chan struct{})
	pid, err := startConfined(spec, os.Args[1:], done)
	if err != nil {
		fail("cannot start the command: %v", err)
	}
	ph.mark("helper: confined and started the command")
	go func() {
		<-stop
		syscall.Kill(-1, syscall.SIGKILL) // every process of the namespace but this one
	}()
	code := reapUntil(pid)
	syscall.Kill(-1, syscall.SIGKILL)
	reapUntil(-1)
	close(done)
	ph.mark("command: ran (and every process it left was killed)")
	if report != nil {
		report.WriteString(endedLine) // the command is over: turnlog's timeout no longer runs
	}
	var rep helperReport
	if lay != nil {
		lay.workspace, lay.staging, lay.stagingID, lay.afterOp = workspace, staging, stagingID, afterOp
		rep, err = applyLayers(lay, spec)
		if err != nil {
			fmt.Fprintf(os.Stderr, "turnlog: the command's changes were not applied to the workspace: %v\n", err)
			if code == 0 {
				code = helperFail
			}
		}
		ph.mark("helper: applied the command's writes")
	}
	if report != nil {
		rep.Phases = ph.list
		json.NewEncoder(report).Encode(rep)
	}
	os.Exit(code)
}

// phases times the steps of a command's run, for the benchmark that reports each.
type phases struct {
	began time.Time
	list  []Phase
}

// Phase is one step of a sandboxed command's run, and how long it took.
type Phase struct {
	Name  string        `json:"name"`
	Took  time.Duration `json:"took"`
	since time.Time
}

func (p *phases) mark(name string) {
	now := time.Now()
	last := p.began
	if n := len(p.list); n > 0 {
		last = p.list[n-1].since
	}
	p.list = append(p.list, Phase{Name: name, Took: now.Sub(last), since: now})
}

// handedDirs are the workspace and staging directories whose descriptors the
// variable env holds (and unsets) with the staging directory's id, or nils.
func handedDirs(env string) (*os.File, *os.File, string) {
	v := os.Getenv(env)
	os.Unsetenv(env)
	parts := strings.SplitN(v, ":", 3)
	if len(parts) != 3 {
		return nil, nil, ""
	}
	ws, err1 := strconv.Atoi(parts[0])
	st, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return nil, nil, ""
	}
	syscall.CloseOnExec(ws)
	syscall.CloseOnExec(st)
	return os.NewFile(uintptr(ws), "workspace"), os.NewFile(uintptr(st), "staging"), parts[2]
}

// pauseAfter is a test's pause (pauseEnv: "<num>/<den>[+<duration>]:<descriptor>",
// after that share of the apply's steps, for that long — an hour, to be killed —),
// or nil.
func pauseAfter(v string) func(done, all int) {
	share, fdText, ok := strings.Cut(v, ":")
	pause := time.Hour
	if s, d, timed := strings.Cut(share, "+"); timed {
		var err error
		if pause, err = time.ParseDuration(d); err != nil {
			return nil
		}
		share = s
	}
	numText, denText, ok2 := strings.Cut(share, "/")
	num, err1 := strconv.Atoi(numText)
	den, err2 := strconv.Atoi(denText)
	fd, err3 := strconv.Atoi(fdText)
	if !ok || !ok2 || err1 != nil || err2 != nil || err3 != nil || den <= 0 {
		return nil
	}
	syscall.CloseOnExec(fd)
	w := os.NewFile(uintptr(fd), "pause")
	return func(done, all int) {
		if done == all*num/den {
			w.WriteString("paused\n")
			time.Sleep(pause)
		}
	}
}

// reapUntil reaps the namespace's processes (orphans come to its first process) until
// pid has exited, and says with what status a shell would; with pid -1 until none is
// left.
func reapUntil(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return helperFail
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}
