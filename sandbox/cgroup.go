package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Cgroups cap a command's whole process tree — memory (its processes' and the pages
// it writes to its tmpfs layers) and the number of processes — where per-process
// limits cannot: three processes under a 1 GiB address-space limit each still hold
// 3 GiB. Each command gets a group of its own nested below the one turnlog runs in
// (never elsewhere), made and owned by turnlog; the helper joins it
// before anything of the command exists, and the command (an unprivileged uid, with
// no cgroup file system in its root) can neither leave nor change it. cgroup v2 is
// used where its memory and pids controllers are enabled below turnlog's group, else
// the v1 memory and pids hierarchies.

// cgroupTree is the groups made for one command.
type cgroupTree struct {
	Version string   `json:"version"` // "v1" or "v2"
	Dirs    []string `json:"dirs"`    // the groups, one per hierarchy
}

// procs are the files the helper writes itself into.
func (c *cgroupTree) procs() []string {
	var out []string
	for _, d := range c.Dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// hierarchy is one mounted cgroup hierarchy and turnlog's group in it.
type hierarchy struct {
	version string
	mount   string
	own     string // turnlog's group, relative to mount
}

// hierarchies finds, from /proc/self/mountinfo and /proc/self/cgroup, the v2
// hierarchy and the v1 ones holding the memory and pids controllers.
func hierarchies() (v2 *hierarchy, memory, pids *hierarchy, err error) {
	own := map[string]string{} // controller (or "" for v2) → turnlog's group
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, nil, nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			own[c] = parts[2]
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(fields) || len(fields) < 5 {
			continue
		}
		mount, fstype, opts := fields[4], fields[sep+1], strings.Split(fields[sep+3], ",")
		switch fstype {
		case "cgroup2":
			if g, ok := own[""]; ok && v2 == nil {
				v2 = &hierarchy{"v2", mount, g}
			}
		case "cgroup":
			for _, o := range opts {
				if o == "memory" && memory == nil {
					memory = &hierarchy{"v1", mount, own["memory"]}
				}
				if o == "pids" && pids == nil {
					pids = &hierarchy{"v1", mount, own["pids"]}
				}
			}
		}
	}
	return v2, memory, pids, sc.Err()
}

// v2Usable says whether the v2 group turnlog runs in hands memory and pids down.
func v2Usable(h *hierarchy) bool {
	if h == nil {
		return false
	}
	raw, err := os.ReadFile(filepath.Join(h.mount, h.own, "cgroup.subtree_control"))
	if err != nil {
		return false
	}
	f := strings.Fields(string(raw))
	has := func(c string) bool {
		for _, x := range f {
			if x == c {
				return true
			}
		}
		return false
	}
	return has("memory") && has("pids")
}

// newCgroupTree makes, below turnlog's own groups, a group capping memory at
// memoryBytes and processes at processes, named name (a random one when empty).
// It fails if the machine has no usable memory and pids controllers.
func newCgroupTree(name string, memoryBytes uint64, processes int) (*cgroupTree, error) {
	v2, memory, pids, err := hierarchies()
	if err != nil {
		return nil, err
	}
	if name == "" {
		var b [8]byte
		rand.Read(b[:])
		name = "turnlog-" + hex.EncodeToString(b[:])
	}
	var t *cgroupTree
	switch {
	case v2Usable(v2):
		t = &cgroupTree{Version: "v2", Dirs: []string{filepath.Join(v2.mount, v2.own, name)}}
	case memory != nil && pids != nil:
		t = &cgroupTree{Version: "v1", Dirs: []string{filepath.Join(memory.mount, memory.own, name), filepath.Join(pids.mount, pids.own, name)}}
	default:
		return nil, errors.New("no cgroup memory and pids controllers here (v2 below turnlog's group, or v1)")
	}
	for _, d := range t.Dirs {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			t.remove()
			return nil, err
		}
	}
	if err := t.setLimits(memoryBytes, processes); err != nil {
		t.remove()
		return nil, err
	}
	return t, nil
}

// setLimits caps the groups' memory (swap included) and processes.
func (c *cgroupTree) setLimits(memoryBytes uint64, processes int) error {
	mem, procs := strconv.FormatUint(memoryBytes, 10), strconv.Itoa(processes)
	if c.Version == "v2" {
		d := c.Dirs[0]
		if err := write(d, "memory.max", mem); err != nil {
			return err
		}
		if err := writeIfPresent(d, "memory.swap.max", "0"); err != nil {
			return err
		}
		return write(d, "pids.max", procs)
	}
	m, p := c.Dirs[0], c.Dirs[1]
	// v1 refuses a memory limit below memsw's: lift memsw first when it shrinks.
	writeIfPresent(m, "memory.memsw.limit_in_bytes", "-1")
	if err := write(m, "memory.limit_in_bytes", mem); err != nil {
		return err
	}
	if err := writeIfPresent(m, "memory.memsw.limit_in_bytes", mem); err != nil { // swap too
		return err
	}
	return write(p, "pids.max", procs)
}

func write(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("cgroup %s: %w", file, err)
	}
	return nil
}

func writeIfPresent(dir, file, value string) error {
	if _, err := os.Stat(filepath.Join(dir, file)); err != nil {
		return nil
	}
	return write(dir, file, value)
}

// remove removes the groups once their processes are gone: those of a command's PID
// namespace die with its first process, a moment after it.
func (c *cgroupTree) remove() {
	for _, d := range c.Dirs {
		for i := 0; i < 100; i++ {
			if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// joinCgroups moves the calling process into the groups (by writing 0: "myself",
// whatever PID namespace it is in).
func joinCgroups(procs []string) error {
	for _, p := range procs {
		if err := os.WriteFile(p, []byte("0"), 0); err != nil {
			return fmt.Errorf("join %s: %w", filepath.Dir(p), err)
		}
	}
	return nil
}

// groupPool keeps the groups of commands that ended, empty, for the next ones:
// making and removing a memory cgroup costs milliseconds, and a removal running while
// another command joins its group holds that up.
type groupPool struct {
	mu      sync.Mutex
	free    []*cgroupTree
	named   map[string]*cgroupTree // long-lived programs' groups, by name
	pending sync.WaitGroup         // groups on their way back (giveBack)
}

// cgroupPool is the groups this process made and may reuse (a pool, like a
// connection pool: nothing in it carries state from one command to the next but
// reclaimable page cache).
var cgroupPool = &groupPool{}

const maxPooledGroups = 8

// get is an empty group with the limits set: one from the pool, else a new one.
func (p *groupPool) get(memoryBytes uint64, processes int) (*cgroupTree, error) {
	for {
		p.mu.Lock()
		if len(p.free) == 0 {
			p.mu.Unlock()
			return newCgroupTree("", memoryBytes, processes)
		}
		t := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.mu.Unlock()
		if err := t.setLimits(memoryBytes, processes); err == nil {
			return t, nil
		}
		go t.remove()
	}
}

// pooledCharge is the most a group may still be charged, once reclaimed, to be handed
// to another command: what the kernel keeps of an ended command's caches (its
// dentries and inodes) — never a page of shared memory or tmpfs, which come on top.
const pooledCharge = 4 << 20

// put gives back a command's group once the command ended: reclaimed and kept if it
// is empty, holds no shared memory or tmpfs page and little else (pooledCharge),
// and the pool has room; else removed. A group whose charge outlived its command is
// never another user's.
func (p *groupPool) put(t *cgroupTree) {
	if t.empty() && t.reclaim() && t.clean() {
		p.mu.Lock()
		if len(p.free) < maxPooledGroups {
			p.free = append(p.free, t)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	t.remove()
}

// giveBack puts a command's group back in the background: reclaiming takes a
// moment that is not the command's caller's.
func (p *groupPool) giveBack(t *cgroupTree) {
	p.pending.Add(1)
	go func() {
		defer p.pending.Done()
		p.put(t)
	}()
}

// keepNamed remembers a long-lived program's group, to remove with the rest.
func (p *groupPool) keepNamed(t *cgroupTree) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.named == nil {
		p.named = map[string]*cgroupTree{}
	}
	p.named[t.Dirs[0]] = t
}

// release removes every group this process made and keeps: the pool's, once those
// on their way back arrived, and the long-lived programs' (which must have ended).
func (p *groupPool) release() {
	p.pending.Wait()
	p.mu.Lock()
	all := p.free
	for _, t := range p.named {
		all = append(all, t)
	}
	p.free, p.named = nil, nil
	p.mu.Unlock()
	for _, t := range all {
		t.remove()
	}
}

// ReleaseCgroups removes the cgroups this process keeps for the next commands: a
// process that runs no more commands (turnlog run, serve as it stops) calls it.
func ReleaseCgroups() { cgroupPool.release() }

// reclaim asks the kernel to give back what the group's memory holds (page cache,
// reclaimable caches), and says whether it could be asked.
func (c *cgroupTree) reclaim() bool {
	d := c.Dirs[0]
	if c.Version == "v2" {
		err := write(d, "memory.reclaim", strconv.FormatInt(1<<50, 10))
		return err == nil || errors.Is(err, syscall.EAGAIN) // EAGAIN: it reclaimed what it could
	}
	return write(d, "memory.force_empty", "0") == nil
}

// clean says whether the group holds no shared memory or tmpfs page and is charged
// little else (pooledCharge).
func (c *cgroupTree) clean() bool {
	d := c.Dirs[0]
	raw, err := os.ReadFile(filepath.Join(d, "memory.stat"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == "shmem" && v != "0" {
			return false
		}
	}
	usage := "memory.usage_in_bytes" // v1: pages and kernel memory
	if c.Version == "v2" {
		usage = "memory.current"
	}
	raw, err = os.ReadFile(filepath.Join(d, usage))
	if err != nil {
		return false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return err == nil && n <= pooledCharge
}

// empty says whether no process is in any of the groups.
func (c *cgroupTree) empty() bool {
	for _, f := range c.procs() {
		raw, err := os.ReadFile(f)
		if err != nil || len(strings.TrimSpace(string(raw))) > 0 {
			return false
		}
	}
	return true
}
